import AppStoreServer
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The object behind `appstore_signing_key *`: the parsed key and the identifiers every signature carries.
final class SigningKeyBox: Sendable {
    let key: SigningKey
    let keyId: String
    let issuerId: String?
    let bundleId: String
    init(key: SigningKey, keyId: String, issuerId: String?, bundleId: String) {
        self.key = key
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
    }
    func requireIssuer() throws(CFailure) -> String {
        guard let issuerId, !issuerId.isEmpty else {
            throw CFailure.argument("this signature needs the issuer id, but the key was created with issuer_id NULL")
        }
        return issuerId
    }
}

/// Input size limits, checked before a byte of the input is read (so an absurd length cannot make the library read
/// or copy gigabytes). Documented in appstoreserver.h.
let maximumPEMLength = 1 << 20
let maximumRequestJSONLength = 1 << 20

@c(appstore_signing_key_new)
public func appstoreSigningKeyNew(_ pem: UnsafePointer<CChar>?, _ pemLen: UInt, _ keyId: UnsafePointer<CChar>?,
                                  _ issuerId: UnsafePointer<CChar>?, _ bundleId: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        guard let out else { throw CFailure.argument("key_out is NULL") }
        let view = try bytes(pem.map(UnsafeRawPointer.init), pemLen, "pem")
        guard view.count <= maximumPEMLength else {
            throw CFailure.argument("pem_len is too large (\(pemLen) bytes; at most \(maximumPEMLength), a .p8 key is about 250)")
        }
        let kid = try utf8String(keyId, "key_id")
        let bid = try utf8String(bundleId, "bundle_id")
        let iss = try optionalUTF8String(issuerId, "issuer_id")
        guard !kid.isEmpty else { throw CFailure.argument("key_id must not be empty") }
        guard !bid.isEmpty else { throw CFailure.argument("bundle_id must not be empty") }
        // Parsed in place from the caller's buffer: no Swift copy of the key text exists to be cleansed.
        let key = try SigningKey(pemBuffer: view)
        out.pointee = retained(SigningKeyBox(key: key, keyId: kid, issuerId: iss, bundleId: bid))
    }
}

/// The C signer callback (see `appstore_signer_fn` in the header).
public typealias CSignerFunction = @convention(c) (
    UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, UInt, UnsafePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UInt,
    UnsafeMutablePointer<UInt>?, UInt32
) -> Int32

/// A host callback as an `ES256Signer`, called on the thread that asked for the signature.
final class CSigner: ES256Signer, @unchecked Sendable {
    // The host promises the callback and user_data may be used from any thread (header contract).
    let function: CSignerFunction
    let userData: UnsafeMutableRawPointer?
    /// The largest DER ECDSA P-256 signature.
    static let capacity = 72

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(function: CSignerFunction, userData: UnsafeMutableRawPointer?) {
        self.function = function
        self.userData = userData
    }

    func sign(message: [UInt8], digest: [UInt8]) throws -> [UInt8] {
        try sign(message: message, digest: digest, timeoutMilliseconds: SigningKey.defaultSignerTimeoutMilliseconds)
    }

    func sign(message: [UInt8], digest: [UInt8], timeoutMilliseconds: UInt32) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.capacity)
        var length: UInt = 0
        let rc = message.withUnsafeBufferPointer { m in
            digest.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    // Outside the fork guard: the host's signer may fork (see guarded).
                    ForkGuard.outside {
                        function(userData, m.baseAddress, UInt(m.count), d.baseAddress, o.baseAddress, UInt(o.count), &length,
                                 timeoutMilliseconds)
                    }
                }
            }
        }
        guard rc == 0 else { throw Failure(description: "the signer callback returned \(rc)") }
        guard length > 0, length <= UInt(Self.capacity) else {
            throw Failure(description: "the signer callback reported a signature of \(length) bytes (1 to \(Self.capacity))")
        }
        return Array(out.prefix(Int(length)))
    }
}

@c(appstore_signing_key_new_with_signer)
public func appstoreSigningKeyNewWithSigner(_ fn: CSignerFunction?, _ userData: UnsafeMutableRawPointer?,
                                            _ publicKey: UnsafePointer<UInt8>?, _ publicKeyLen: UInt, _ timeoutMs: UInt32,
                                            _ keyId: UnsafePointer<CChar>?, _ issuerId: UnsafePointer<CChar>?,
                                            _ bundleId: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                            _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        guard let fn else { throw CFailure.argument("fn is NULL") }
        guard let out else { throw CFailure.argument("key_out is NULL") }
        guard let publicKey, publicKeyLen > 0 else { throw CFailure.argument("public_key is NULL or empty: the signer's public key is required") }
        guard publicKeyLen <= 1 << 16 else { throw CFailure.argument("public_key_len is too large (\(publicKeyLen) bytes)") }
        let kid = try utf8String(keyId, "key_id")
        let bid = try utf8String(bundleId, "bundle_id")
        let iss = try optionalUTF8String(issuerId, "issuer_id")
        guard !kid.isEmpty else { throw CFailure.argument("key_id must not be empty") }
        guard !bid.isEmpty else { throw CFailure.argument("bundle_id must not be empty") }
        let key = try SigningKey(signer: CSigner(function: fn, userData: userData),
                                 publicKey: Array(UnsafeBufferPointer(start: publicKey, count: Int(publicKeyLen))),
                                 timeoutMilliseconds: timeoutMs)
        out.pointee = retained(SigningKeyBox(key: key, keyId: kid, issuerId: iss, bundleId: bid))
    }
}

@c(appstore_signing_key_free)
public func appstoreSigningKeyFree(_ key: OpaquePointer?) { release(key, SigningKeyBox.self) }

@c(appstore_signing_key_create_api_token)
public func appstoreSigningKeyCreateApiToken(_ key: OpaquePointer?, _ issuedAt: Int64, _ lifetime: Int64,
                                             _ tokenOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(key, SigningKeyBox.self, "key")
        guard let tokenOut else { throw CFailure.argument("token_out is NULL") }
        let iss = try box.requireIssuer()
        guard issuedAt >= 0 else { throw CFailure.argument("issued_at must be >= 0 (0 = now), got \(issuedAt)") }
        let date = issuedAt == 0 ? Date() : Date(timeIntervalSince1970: Double(issuedAt))
        let token = try AppStoreServerAPIToken.create(signingKey: box.key, keyId: box.keyId, issuerId: iss, bundleId: box.bundleId,
                                          issuedAt: date, lifetime: lifetime == 0 ? AppStoreServerAPIToken.defaultLifetime : lifetime)
        tokenOut.pointee = try mallocCString(Array(token.utf8))
    }
}

@c(appstore_signing_key_create_promotional_offer_v1)
public func appstoreSigningKeyCreatePromotionalOfferV1(
    _ key: OpaquePointer?, _ productId: UnsafePointer<CChar>?, _ offerId: UnsafePointer<CChar>?,
    _ appAccountToken: UnsafePointer<CChar>?, _ nonce: UnsafePointer<CChar>?, _ timestampMs: Int64,
    _ signatureOut: StringOut?, _ nonceOut: StringOut?, _ timestampOut: UnsafeMutablePointer<Int64>?, _ errOut: ErrorOut?
) -> Int32 {
    guarded(errOut) {
        let box = try handle(key, SigningKeyBox.self, "key")
        guard let signatureOut else { throw CFailure.argument("signature_out is NULL") }
        let product = try utf8String(productId, "product_id")
        let offer = try utf8String(offerId, "offer_id")
        let token = try optionalUTF8String(appAccountToken, "app_account_token") ?? ""
        let n = try optionalUTF8String(nonce, "nonce")
        guard timestampMs >= 0 else { throw CFailure.argument("timestamp_ms must be >= 0 (0 = now), got \(timestampMs)") }
        let result = try PromotionalOfferSignatureCreator(signingKey: box.key, keyId: box.keyId, bundleId: box.bundleId)
            .createSignature(productIdentifier: product, subscriptionOfferID: offer, appAccountToken: token,
                             nonce: n, timestamp: timestampMs == 0 ? nil : timestampMs)
        let sig = try mallocCString(Array(result.signature.utf8))
        var nonceCopy: UnsafeMutablePointer<CChar>?
        if nonceOut != nil {
            do throws(CFailure) { nonceCopy = try mallocCString(Array(result.nonce.utf8)) } catch { freeCString(sig); throw error }
        }
        signatureOut.pointee = sig
        nonceOut?.pointee = nonceCopy
        timestampOut?.pointee = result.timestamp
    }
}

@c(appstore_signing_key_create_promotional_offer_v2)
public func appstoreSigningKeyCreatePromotionalOfferV2(
    _ key: OpaquePointer?, _ productId: UnsafePointer<CChar>?, _ offerIdentifier: UnsafePointer<CChar>?,
    _ transactionId: UnsafePointer<CChar>?, _ nonce: UnsafePointer<CChar>?, _ jwsOut: StringOut?, _ errOut: ErrorOut?
) -> Int32 {
    guarded(errOut) {
        let box = try handle(key, SigningKeyBox.self, "key")
        guard let jwsOut else { throw CFailure.argument("jws_out is NULL") }
        let product = try utf8String(productId, "product_id")
        let offer = try utf8String(offerIdentifier, "offer_identifier")
        let tx = try optionalUTF8String(transactionId, "transaction_id")
        let n = try optionalUTF8String(nonce, "nonce")
        let iss = try box.requireIssuer()
        let jws = try PromotionalOfferV2SignatureCreator(signingKey: box.key, keyId: box.keyId, issuerId: iss, bundleId: box.bundleId)
            .createSignature(productId: product, offerIdentifier: offer, transactionId: tx, nonce: n)
        jwsOut.pointee = try mallocCString(Array(jws.utf8))
    }
}

@c(appstore_signing_key_create_introductory_offer_eligibility)
public func appstoreSigningKeyCreateIntroductoryOfferEligibility(
    _ key: OpaquePointer?, _ productId: UnsafePointer<CChar>?, _ allow: Int32, _ transactionId: UnsafePointer<CChar>?,
    _ nonce: UnsafePointer<CChar>?, _ jwsOut: StringOut?, _ errOut: ErrorOut?
) -> Int32 {
    guarded(errOut) {
        let box = try handle(key, SigningKeyBox.self, "key")
        guard let jwsOut else { throw CFailure.argument("jws_out is NULL") }
        let product = try utf8String(productId, "product_id")
        let tx = try utf8String(transactionId, "transaction_id")
        let n = try optionalUTF8String(nonce, "nonce")
        guard allow == 0 || allow == 1 else { throw CFailure.argument("allow must be 0 or 1, got \(allow)") }
        let iss = try box.requireIssuer()
        let jws = try IntroductoryOfferEligibilitySignatureCreator(signingKey: box.key, keyId: box.keyId, issuerId: iss, bundleId: box.bundleId)
            .createSignature(productId: product, allowIntroductoryOffer: allow == 1, transactionId: tx, nonce: n)
        jwsOut.pointee = try mallocCString(Array(jws.utf8))
    }
}

@c(appstore_signing_key_create_advanced_commerce_in_app)
public func appstoreSigningKeyCreateAdvancedCommerceInApp(
    _ key: OpaquePointer?, _ requestJSON: UnsafePointer<CChar>?, _ requestJSONLen: UInt, _ nonce: UnsafePointer<CChar>?,
    _ jwsOut: StringOut?, _ errOut: ErrorOut?
) -> Int32 {
    guarded(errOut) {
        let box = try handle(key, SigningKeyBox.self, "key")
        guard let jwsOut else { throw CFailure.argument("jws_out is NULL") }
        let view = try bytes(requestJSON.map(UnsafeRawPointer.init), requestJSONLen, "request_json")
        guard view.count <= maximumRequestJSONLength else {
            throw CFailure.argument("request_json_len is too large (\(requestJSONLen) bytes; at most \(maximumRequestJSONLength))")
        }
        let json = [UInt8](view)
        let n = try optionalUTF8String(nonce, "nonce")
        let iss = try box.requireIssuer()
        let jws = try AdvancedCommerceInAppSignatureCreator(signingKey: box.key, keyId: box.keyId, issuerId: iss, bundleId: box.bundleId)
            .createSignature(requestJSON: json, nonce: n)
        jwsOut.pointee = try mallocCString(Array(jws.utf8))
    }
}
