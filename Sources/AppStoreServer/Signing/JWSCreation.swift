import COpenSSL
import FoundationEssentials

/// Compact ES256 JWS creation over a header and claims written by `JSONWriter`.
enum JWSCreation {
    static func header(keyId: String) -> [UInt8] {
        var h = JSONWriter()
        h.beginObject()
        h.member("alg", "ES256")
        h.member("kid", keyId)
        h.member("typ", "JWT")
        h.endObject()
        return h.bytes
    }

    static func sign(key: SigningKey, header: [UInt8], claims: [UInt8], timeLeftMilliseconds: Int64? = nil) throws(SigningError) -> String {
        let input = Base64.encode(header, alphabet: .url) + "." + Base64.encode(claims, alphabet: .url)
        var s = input
        let signature = try s.withUTF8 { p in
            Result { () throws(SigningError) in try key.signJOSE(UnsafeRawBufferPointer(p), timeLeftMilliseconds: timeLeftMilliseconds) }
        }.get()
        return input + "." + Base64.encode(signature, alphabet: .url)
    }

    static func nonEmpty(_ value: String, _ name: String) throws(SigningError) {
        if value.isEmpty { throw .argument("\(name) must not be empty") }
    }

    static func seconds(_ date: Date) -> Int64 { Timestamp.seconds(date) }

    /// A random (version 4) UUID in lowercase text. From OpenSSL's DRBG: Foundation's UUID() opens /dev/urandom
    /// on every call, which costs more than the rest of a nonce-bearing signature's bookkeeping.
    /// The nonce to sign: the caller's UUID lowercased, or a fresh one when nil; anything else is refused.
    static func nonce(_ given: String?) throws(SigningError) -> String {
        guard let given else { return lowercaseUUID() }
        let n = given.lowercased()
        guard UUID(uuidString: n) != nil else { throw .argument("nonce must be a UUID, got \(QuotedText.quote(given))") }
        return n
    }

    static func lowercaseUUID() -> String {
        var b = [UInt8](repeating: 0, count: 16)
        if RAND_bytes(&b, 16) != 1 { return UUID().uuidString.lowercased() }
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in b.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// App Store Server API bearer tokens (ES256 JWT; Apple's "Generating JSON Web Tokens for API requests").
public enum AppStoreServerAPIToken {
    /// Apple rejects tokens that live longer than 60 minutes.
    public static let maximumLifetime: Int64 = 3600
    /// Five minutes, in seconds.
    public static let defaultLifetime: Int64 = 300

    /// Header `alg`, `kid`, `typ: JWT`; claims `iss`, `iat`, `exp`, `aud: appstoreconnect-v1`, `bid`.
    public static func create(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String,
                              issuedAt: Date = Date(), lifetime: Int64 = defaultLifetime) throws(SigningError) -> String {
        try create(signingKey: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId, issuedAt: issuedAt,
                   lifetime: lifetime, timeLeftMilliseconds: nil)
    }

    /// As above; `timeLeftMilliseconds`: the API call's time left, passed on to an external signer.
    static func create(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String, issuedAt: Date,
                       lifetime: Int64, timeLeftMilliseconds: Int64?) throws(SigningError) -> String {
        try JWSCreation.nonEmpty(keyId, "keyId")
        try JWSCreation.nonEmpty(issuerId, "issuerId")
        try JWSCreation.nonEmpty(bundleId, "bundleId")
        guard lifetime > 0, lifetime <= maximumLifetime else {
            throw .argument("token lifetime must be 1...\(maximumLifetime) seconds (Apple's 60-minute maximum), got \(lifetime)")
        }
        let iat = JWSCreation.seconds(issuedAt)
        var c = JSONWriter()
        c.beginObject()
        c.member("iss", issuerId)
        c.member("iat", iat)
        c.member("exp", iat + lifetime)
        c.member("aud", "appstoreconnect-v1")
        c.member("bid", bundleId)
        c.endObject()
        return try JWSCreation.sign(key: signingKey, header: JWSCreation.header(keyId: keyId), claims: c.bytes,
                                    timeLeftMilliseconds: timeLeftMilliseconds)
    }
}

/// Shared base of Apple's JWS signature creators: no `exp`, a lowercase UUID `nonce` (fresh, or the caller's: Apple's Java
/// creators take it from an overridable `createNonce()`), `iat`, `iss`, `bid`, `aud`.
struct JWSSignatureCreator: Sendable {
    let key: SigningKey
    let keyId: String
    let issuerId: String
    let bundleId: String

    init(key: SigningKey, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        try JWSCreation.nonEmpty(keyId, "keyId")
        try JWSCreation.nonEmpty(issuerId, "issuerId")
        try JWSCreation.nonEmpty(bundleId, "bundleId")
        self.key = key
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
    }

    func create(audience: String, issuedAt: Date = Date(), nonce: String? = nil,
                features: (inout JSONWriter) -> Void) throws(SigningError) -> String {
        let n = try JWSCreation.nonce(nonce)
        var c = JSONWriter()
        c.beginObject()
        c.member("iss", issuerId)
        c.member("iat", JWSCreation.seconds(issuedAt))
        c.member("aud", audience)
        c.member("bid", bundleId)
        c.member("nonce", n)
        features(&c)
        c.endObject()
        return try JWSCreation.sign(key: key, header: JWSCreation.header(keyId: keyId), claims: c.bytes)
    }
}

/// The Apple-style initializers' key parsing: the key error is kept whole (reason and message) in `.invalidKey`.
func loadKey(_ pem: String) throws(SigningError) -> SigningKey {
    do throws(SigningKeyError) {
        return try SigningKey(pem: pem)
    } catch {
        throw SigningError(.invalidKey(error), error.message)
    }
}

/// Promotional offer V2 signatures (StoreKit 2 `Product.PurchaseOption.promotionalOffer`), `aud: promotional-offer`.
public struct PromotionalOfferV2SignatureCreator: Sendable {
    let base: JWSSignatureCreator

    /// A creator that signs with `signingKey` for the key id, issuer and bundle id given.
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        base = try JWSSignatureCreator(key: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }
    /// Apple's initializer: the PEM is parsed here (prefer sharing one `SigningKey`).
    public init(signingKey: String, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        try self.init(signingKey: try loadKey(signingKey), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }

    /// Claims `productId`, `offerIdentifier`, and `transactionId` only when given. `nonce`: a UUID, or nil for a fresh one.
    public func createSignature(productId: String, offerIdentifier: String, transactionId: String? = nil,
                                nonce: String? = nil) throws(SigningError) -> String {
        try JWSCreation.nonEmpty(productId, "productId")
        try JWSCreation.nonEmpty(offerIdentifier, "offerIdentifier")
        return try base.create(audience: "promotional-offer", nonce: nonce) { c in
            c.member("productId", productId)
            c.member("offerIdentifier", offerIdentifier)
            if let transactionId { c.member("transactionId", transactionId) }
        }
    }
}

/// Introductory offer eligibility signatures, `aud: introductory-offer-eligibility`.
public struct IntroductoryOfferEligibilitySignatureCreator: Sendable {
    let base: JWSSignatureCreator

    /// A creator that signs with `signingKey` for the key id, issuer and bundle id given.
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        base = try JWSSignatureCreator(key: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }
    /// Apple's initializer: the PEM is parsed here (prefer sharing one `SigningKey`).
    public init(signingKey: String, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        try self.init(signingKey: try loadKey(signingKey), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }

    /// Claims `productId`, `allowIntroductoryOffer` (a JSON boolean) and `transactionId`. `nonce`: a UUID, or nil for a
    /// fresh one.
    public func createSignature(productId: String, allowIntroductoryOffer: Bool, transactionId: String,
                                nonce: String? = nil) throws(SigningError) -> String {
        try JWSCreation.nonEmpty(productId, "productId")
        try JWSCreation.nonEmpty(transactionId, "transactionId")
        return try base.create(audience: "introductory-offer-eligibility", nonce: nonce) { c in
            c.member("productId", productId)
            c.member("allowIntroductoryOffer", allowIntroductoryOffer)
            c.member("transactionId", transactionId)
        }
    }
}

/// A legacy (StoreKit 1, SKPaymentDiscount) promotional offer signature with the nonce and timestamp it signed.
public struct PromotionalOfferV1Signature: Hashable, Sendable {
    /// Standard base64 of the DER ECDSA signature.
    public let signature: String
    /// Lowercase UUID.
    public let nonce: String
    /// Milliseconds since 1970.
    public let timestamp: Int64
}

/// Promotional offer signatures v1 (legacy StoreKit 1).
public struct PromotionalOfferSignatureCreator: Sendable {
    let key: SigningKey
    let keyId: String
    let bundleId: String

    /// A creator that signs with `signingKey` for the key id and bundle id given.
    public init(signingKey: SigningKey, keyId: String, bundleId: String) throws(SigningError) {
        try JWSCreation.nonEmpty(keyId, "keyId")
        try JWSCreation.nonEmpty(bundleId, "bundleId")
        self.key = signingKey
        self.keyId = keyId
        self.bundleId = bundleId
    }
    /// Apple's initializer.
    public init(privateKey: String, keyId: String, bundleId: String) throws(SigningError) {
        try self.init(signingKey: try loadKey(privateKey), keyId: keyId, bundleId: bundleId)
    }

    /// The exact string that is signed: bundle id, key id, product id, offer id, lowercase app account token (may
    /// be empty), lowercase nonce, timestamp in ms — joined with U+2063 INVISIBLE SEPARATOR.
    public func payload(productIdentifier: String, subscriptionOfferID: String, appAccountToken: String,
                        nonce: String, timestamp: Int64) -> String {
        [bundleId, keyId, productIdentifier, subscriptionOfferID, appAccountToken.lowercased(), nonce.lowercased(),
         String(timestamp)].joined(separator: "\u{2063}")
    }

    /// Apple's signature: ECDSA P-256 over SHA-256 of the payload, DER, standard base64.
    public func createSignature(productIdentifier: String, subscriptionOfferID: String, appAccountToken: String,
                                nonce: UUID, timestamp: Int64) throws(SigningError) -> String {
        try createSignature(productIdentifier: productIdentifier, subscriptionOfferID: subscriptionOfferID,
                            appAccountToken: appAccountToken, nonce: nonce.uuidString, timestamp: timestamp).signature
    }

    /// Signs with the given nonce / timestamp, or a fresh random nonce and the current time when nil, and returns
    /// what was used.
    public func createSignature(productIdentifier: String, subscriptionOfferID: String, appAccountToken: String = "",
                                nonce: String? = nil, timestamp: Int64? = nil) throws(SigningError) -> PromotionalOfferV1Signature {
        try JWSCreation.nonEmpty(productIdentifier, "productIdentifier")
        try JWSCreation.nonEmpty(subscriptionOfferID, "subscriptionOfferID")
        // The fields are joined with U+2063: a field holding one would let two different offers sign the same text.
        for (name, value) in [("bundleId", bundleId), ("keyId", keyId), ("productIdentifier", productIdentifier),
                              ("subscriptionOfferID", subscriptionOfferID), ("appAccountToken", appAccountToken)]
        where value.unicodeScalars.contains("\u{2063}") {
            throw .argument("\(name) contains U+2063 INVISIBLE SEPARATOR, the separator of the signed fields (two different "
                            + "offers would sign the same text)")
        }
        let n = try JWSCreation.nonce(nonce)
        let ts = timestamp ?? Timestamp.milliseconds(Date())
        var text = payload(productIdentifier: productIdentifier, subscriptionOfferID: subscriptionOfferID,
                           appAccountToken: appAccountToken, nonce: n, timestamp: ts)
        let der = try text.withUTF8 { p in Result { () throws(SigningError) in try key.signDER(UnsafeRawBufferPointer(p)) } }.get()
        return PromotionalOfferV1Signature(signature: Base64.encode(der, alphabet: .standard), nonce: n, timestamp: ts)
    }
}
