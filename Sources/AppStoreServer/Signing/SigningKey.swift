import COpenSSL
import FoundationEssentials

/// Why a signing key could not be loaded. Messages never contain key material.
public struct SigningKeyError: AppStoreServerFailure, Hashable {
    /// What is wrong with the key.
    public enum Kind: Int32, Hashable, Sendable {
        /// No `-----BEGIN PRIVATE KEY-----` block.
        case notPEM = 1
        /// Encrypted PKCS#8: provide the plain `.p8`.
        case encrypted = 2
        /// Truncated or corrupt PEM / DER.
        case malformed = 3
        /// Not an EC key (RSA, Ed25519, ...).
        case notEC = 4
        /// An EC key, but not on P-256.
        case wrongCurve = 5
    }
    /// What is wrong with the key.
    public let kind: Kind
    public let message: String
    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var statusCode: AppStoreStatus { .invalidKey }
    public var reason: FailureReason {
        switch kind {
        case .notPEM: .keyNotPEM
        case .encrypted: .keyEncrypted
        case .malformed: .keyMalformed
        case .notEC: .keyNotEC
        case .wrongCurve: .keyWrongCurve
        }
    }
}

/// An App Store Connect private key (PKCS#8 PEM `.p8`, EC P-256), parsed once. Immutable and thread-safe: one
/// instance may sign concurrently from many threads. The key is cleansed from memory when the instance is freed
/// (OpenSSL clears EC private scalars on free). The PEM text is searched as bytes (never turned into a `String`),
/// and every transient copy this type makes of it is cleansed with `OPENSSL_cleanse` right after parsing.
///
/// Or a key held outside the process: `SigningKey(signer:)` hands every signature to an `ES256Signer` (KMS, HSM).
public final class SigningKey: @unchecked Sendable {
    /// The parsed key; nil when an external signer holds it.
    let pkey: OpaquePointer?
    let signer: (any ES256Signer)?
    /// The external signer's public key: every signature it returns is verified with it before use.
    let signerPublicKey: OpaquePointer?
    /// How long the external signer may take for one signature.
    let signerTimeoutMilliseconds: UInt32

    /// The default deadline of an external signer (a KMS answers in tens of milliseconds).
    public static let defaultSignerTimeoutMilliseconds: UInt32 = 10_000

    /// A key held outside the process: every signature made with this key is asked of `signer`, then verified with
    /// `publicKey` (the signer's P-256 public key, as KMS and HSM APIs hand it out: PEM `-----BEGIN PUBLIC KEY-----`
    /// or DER SubjectPublicKeyInfo) before it is used, so a signer answering with another key, random bytes or a
    /// replayed signature fails here (`signerFailed`) instead of at Apple. A signature that took longer than
    /// `timeoutMilliseconds` (0: the default, 10 s) is refused too; the signer's own client must enforce its
    /// deadline, since nothing can interrupt it.
    public init(signer: any ES256Signer, publicKey: [UInt8], timeoutMilliseconds: UInt32 = 0) throws(SigningKeyError) {
        self.signerPublicKey = try publicKey.withUnsafeBytes { b in Result { () throws(SigningKeyError) in try Self.parsePublic(b) } }.get()
        self.pkey = nil
        self.signer = signer
        self.signerTimeoutMilliseconds = timeoutMilliseconds == 0 ? Self.defaultSignerTimeoutMilliseconds : timeoutMilliseconds
    }

    /// An EC P-256 public key from PEM (`-----BEGIN PUBLIC KEY-----`) or DER SubjectPublicKeyInfo.
    static func parsePublic(_ bytes: UnsafeRawBufferPointer) throws(SigningKeyError) -> OpaquePointer {
        guard let base = bytes.baseAddress, !bytes.isEmpty, bytes.count <= 1 << 16 else {
            throw SigningKeyError(.malformed, "the signer's public key is empty or too large (\(bytes.count) bytes)")
        }
        let parsed: OpaquePointer?
        if KeyMemory.contains(bytes, Array("-----BEGIN PUBLIC KEY-----".utf8)) {
            guard let bio = BIO_new_mem_buf(base, Int32(bytes.count)) else { throw SigningKeyError(.malformed, "out of memory") }
            defer { BIO_free(bio) }
            parsed = PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        } else if KeyMemory.contains(bytes, Array("-----BEGIN".utf8)) {
            throw SigningKeyError(.notPEM, "the signer's public key must be a PEM PUBLIC KEY block or DER SubjectPublicKeyInfo "
                                  + "(a private key or certificate was given)")
        } else {
            var p: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
            parsed = d2i_PUBKEY(nil, &p, bytes.count)
            if let key = parsed, let end = p, end - base.assumingMemoryBound(to: UInt8.self) != bytes.count {
                EVP_PKEY_free(key)
                OpenSSL.drainErrors()
                throw SigningKeyError(.malformed, "the signer's public key has bytes after its DER SubjectPublicKeyInfo")
            }
        }
        OpenSSL.drainErrors()
        guard let key = parsed else {
            throw SigningKeyError(.malformed, "the signer's public key is neither PEM nor DER SubjectPublicKeyInfo")
        }
        if let problem = curveProblem(key) {
            EVP_PKEY_free(key)
            throw problem
        }
        return key
    }

    /// Why `key` is not an EC P-256 key, or nil.
    private static func curveProblem(_ key: OpaquePointer) -> SigningKeyError? {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            return SigningKeyError(.notEC, "the key is not an EC key; App Store Connect keys are EC P-256")
        }
        var name = [CChar](repeating: 0, count: 64)
        var len = 0
        let ok = EVP_PKEY_get_group_name(key, &name, name.count, &len) == 1
        let group = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard ok, group == "prime256v1" else {
            return SigningKeyError(.wrongCurve, "the EC key is on curve \(ok ? group : "unknown"); ES256 requires P-256 (prime256v1)")
        }
        return nil
    }

    /// The largest PEM input accepted (OpenSSL's memory BIO takes an `Int32` length). A `.p8` key is ~250 bytes.
    static let maximumPEMLength = Int(Int32.max)

    /// A key from the `.p8` PEM text (the text's bytes are cleared once read).
    public convenience init(pem: String) throws(SigningKeyError) {
        var bytes = Array(pem.utf8)
        defer { KeyMemory.cleanse(&bytes) }
        try self.init(pemBytes: bytes)
    }

    /// - Parameter pemBytes: the PEM text (`-----BEGIN PRIVATE KEY-----`, or SEC1 `EC PRIVATE KEY`).
    public convenience init(pemBytes: [UInt8]) throws(SigningKeyError) {
        let parsed = pemBytes.withUnsafeBytes { Self.parse($0) }
        try self.init(parsed: parsed)
    }

    /// The PEM text in memory the caller owns (borrowed for the call, never copied by Swift; for the C ABI).
    public convenience init(pemBuffer: UnsafeRawBufferPointer) throws(SigningKeyError) {
        try self.init(parsed: Self.parse(pemBuffer))
    }

    private init(parsed: Result<OpaquePointer, SigningKeyError>) throws(SigningKeyError) {
        switch parsed {
        case .success(let key): pkey = key
        case .failure(let error): throw error
        }
        signer = nil
        signerPublicKey = nil
        signerTimeoutMilliseconds = 0
    }

    private static let encryptedMarkers: [[UInt8]] = [Array("-----BEGIN ENCRYPTED PRIVATE KEY-----".utf8),
                                                       Array("Proc-Type: 4,ENCRYPTED".utf8)]
    private static let keyMarkers: [[UInt8]] = [Array("-----BEGIN PRIVATE KEY-----".utf8),
                                                 Array("-----BEGIN EC PRIVATE KEY-----".utf8)]

    /// Parses PEM text into an EC P-256 EVP_PKEY (owned by the caller). Reads only `pem`; makes no copy of it.
    static func parse(_ pem: UnsafeRawBufferPointer) -> Result<OpaquePointer, SigningKeyError> {
        guard pem.count <= maximumPEMLength else {
            return .failure(SigningKeyError(.malformed, "the PEM input is too large (\(pem.count) bytes)"))
        }
        if encryptedMarkers.contains(where: { KeyMemory.contains(pem, $0) }) {
            return .failure(SigningKeyError(.encrypted, "the private key is encrypted; provide the unencrypted .p8 key from App Store Connect"))
        }
        guard keyMarkers.contains(where: { KeyMemory.contains(pem, $0) }) else {
            return .failure(SigningKeyError(.notPEM, "not a PEM private key: expected a -----BEGIN PRIVATE KEY----- block (.p8 file)"))
        }
        let parsed: OpaquePointer? = {
            guard let base = pem.baseAddress, let bio = BIO_new_mem_buf(base, Int32(pem.count)) else { return nil }
            defer { BIO_free(bio) }
            // An empty passphrase (not NULL) so OpenSSL never prompts on a terminal.
            var empty: [CChar] = [0]
            return empty.withUnsafeMutableBytes { PEM_read_bio_PrivateKey(bio, nil, nil, $0.baseAddress) }
        }()
        OpenSSL.drainErrors()
        guard let key = parsed else {
            return .failure(SigningKeyError(.malformed, "the PEM private key could not be parsed (truncated or corrupt base64/DER)"))
        }
        if let problem = curveProblem(key) {
            EVP_PKEY_free(key)
            return .failure(problem)
        }
        // A bit flip in the private scalar still parses, and would sign silently with a key Apple does not know: the
        // public key stored beside it (every .p8 carries one) must be the scalar's.
        guard pairwiseConsistent(key) else {
            EVP_PKEY_free(key)
            return .failure(SigningKeyError(.malformed, "the private key does not match the public key stored with it "
                                            + "(the .p8 file is corrupt)"))
        }
        return .success(key)
    }

    private static func pairwiseConsistent(_ key: OpaquePointer) -> Bool {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { OpenSSL.drainErrors(); return false }
        defer { EVP_PKEY_CTX_free(ctx) }
        let ok = EVP_PKEY_pairwise_check(ctx) == 1
        OpenSSL.drainErrors()
        return ok
    }

    deinit {
        if let pkey { EVP_PKEY_free(pkey) }
        if let signerPublicKey { EVP_PKEY_free(signerPublicKey) }
    }

    /// ECDSA P-256 over SHA-256 of `message`, DER-encoded (the form of promotional offer v1 signatures).
    func signDER(_ message: UnsafeRawBufferPointer) throws(SigningError) -> [UInt8] {
        guard let pkey else { return ES256.rawToDER(try externalRaw(message)) }
        guard let der = Self.localDER(pkey, message) else {
            throw SigningError(.signingFailed, "OpenSSL could not create the ECDSA signature")
        }
        return der
    }

    /// Whether an external signer holds the key (its signatures take a round trip the API call's deadline counts).
    var isExternal: Bool { signer != nil }

    /// JOSE ES256 signature (64-byte r||s). `timeLeftMilliseconds`: an API call's time left, which bounds an external
    /// signer's time when it is less than the key's signer timeout.
    func signJOSE(_ message: UnsafeRawBufferPointer, timeLeftMilliseconds: Int64? = nil) throws(SigningError) -> [UInt8] {
        guard let pkey else { return try externalRaw(message, timeLeftMilliseconds: timeLeftMilliseconds) }
        guard let der = Self.localDER(pkey, message), let raw = ES256.derToRaw(der) else {
            throw SigningError(.signingFailed, "OpenSSL could not create the ES256 signature")
        }
        return raw
    }

    private static func localDER(_ pkey: OpaquePointer, _ message: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let ctx = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { OpenSSL.drainErrors(); return nil }
        let msg = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var len = 0
        guard EVP_DigestSign(ctx, nil, &len, msg, message.count) == 1, len > 0 else { OpenSSL.drainErrors(); return nil }
        var der = [UInt8](repeating: 0, count: len)
        guard EVP_DigestSign(ctx, &der, &len, msg, message.count) == 1 else { OpenSSL.drainErrors(); return nil }
        return Array(der.prefix(len))
    }

    /// The external signer's signature of `message` as 64 bytes r||s, checked: well-formed, in time, and valid for
    /// `message` under the signer's public key.
    private func externalRaw(_ message: UnsafeRawBufferPointer, timeLeftMilliseconds: Int64? = nil) throws(SigningError) -> [UInt8] {
        guard let signer, let signerPublicKey else {
            throw SigningError(.signingFailed, "the signing key has neither a key nor a signer")
        }
        let bytes = Array(message)
        var digest = [UInt8](repeating: 0, count: 32)
        guard SHA256(bytes, bytes.count, &digest) != nil else {
            throw SigningError(.signingFailed, "OpenSSL could not compute the SHA-256 digest")
        }
        // The signer is told the time it has: its own timeout, or the API call's time left when that is nearer (the
        // call judges an overrun of its deadline itself: APICall).
        let allowed = min(Int64(signerTimeoutMilliseconds), max(1, timeLeftMilliseconds ?? Int64.max))
        let started = Timestamp.monotonicMilliseconds()
        let signature: [UInt8]
        do { signature = try signer.sign(message: bytes, digest: digest, timeoutMilliseconds: UInt32(allowed)) } catch {
            throw SigningError(.signerFailed, "the external signer failed: \(error)")
        }
        let took = Timestamp.monotonicMilliseconds() - started
        guard took <= Int64(signerTimeoutMilliseconds) else {
            throw SigningError(.signerFailed, "the external signer took \(took) ms; its deadline is \(signerTimeoutMilliseconds) ms")
        }
        guard let raw = ExternalSignature.raw(signature) else { throw Self.unusable(signature) }
        guard ES256.verify(publicKey: signerPublicKey, signature: raw, message: message) else {
            throw SigningError(.signerFailed, "the external signer's signature does not verify with its public key "
                               + "(a signature by another key, of another message, or not a signature at all)")
        }
        return raw
    }

    private static func unusable(_ signature: [UInt8]) -> SigningError {
        SigningError(.signerFailed, "the external signer returned \(signature.count) bytes that are not an ECDSA P-256 "
                     + "signature (64 bytes r||s, or DER with 0 < r, s < n)")
    }
}

/// Handling of memory that may hold key material.
enum KeyMemory {
    /// Overwrites the array's bytes with zeros through `OPENSSL_cleanse`, which the optimiser cannot drop (a plain
    /// store loop to memory that is freed right after may be removed as a dead store).
    static func cleanse(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { OPENSSL_cleanse(base, $0.count) } }
    }

    /// Whether `needle` occurs in `haystack`, comparing bytes (no `String` copy of the text is made).
    static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first {
                var k = 1
                while k < needle.count, haystack[i + k] == needle[k] { k += 1 }
                if k == needle.count { return true }
            }
            i += 1
        }
        return false
    }
}

extension ES256 {
    /// DER ECDSA-Sig-Value -> 64-byte JOSE r||s.
    static func derToRaw(_ der: [UInt8]) -> [UInt8]? {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buf.count)
        }
        guard let sig else { return nil }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard let base = o.baseAddress else { return false }
            return BN_bn2binpad(ECDSA_SIG_get0_r(sig), base, 32) == 32 && BN_bn2binpad(ECDSA_SIG_get0_s(sig), base + 32, 32) == 32
        }
        return ok ? out : nil
    }
}
