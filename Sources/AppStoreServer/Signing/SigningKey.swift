import COpenSSL
import FoundationEssentials

/// Why a signing key could not be loaded. Messages never contain key material.
public struct SigningKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Int32, Hashable, Sendable {
        case notPEM = 1
        case encrypted = 2
        case malformed = 3
        case notEC = 4
        case wrongCurve = 5
    }
    public let reason: Reason
    public let message: String
    init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
    public var description: String { message }
}

/// An App Store Connect private key (PKCS#8 PEM `.p8`, EC P-256), parsed once. Immutable and thread-safe: one
/// instance may sign concurrently from many threads. The key is cleansed from memory when the instance is freed
/// (OpenSSL clears EC private scalars on free; our transient copies of the PEM are cleansed right after parsing).
public final class SigningKey: @unchecked Sendable {
    let pkey: OpaquePointer

    public convenience init(pem: String) throws(SigningKeyError) {
        var bytes = Array(pem.utf8)
        defer { bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        try self.init(pemBytes: bytes)
    }

    /// - Parameter pemBytes: the PEM text (`-----BEGIN PRIVATE KEY-----`, or SEC1 `EC PRIVATE KEY`).
    public init(pemBytes: [UInt8]) throws(SigningKeyError) {
        let text = String(decoding: pemBytes.prefix(4096), as: UTF8.self)
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw SigningKeyError(.encrypted, "the private key is encrypted; provide the unencrypted .p8 key from App Store Connect")
        }
        guard text.contains("-----BEGIN PRIVATE KEY-----") || text.contains("-----BEGIN EC PRIVATE KEY-----") else {
            throw SigningKeyError(.notPEM, "not a PEM private key: expected a -----BEGIN PRIVATE KEY----- block (.p8 file)")
        }
        guard pemBytes.count <= Int(Int32.max) else { throw SigningKeyError(.malformed, "the PEM input is too large") }
        let parsed: OpaquePointer? = pemBytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // An empty passphrase (not NULL) so OpenSSL never prompts on a terminal.
            var empty: [CChar] = [0]
            return empty.withUnsafeMutableBytes { PEM_read_bio_PrivateKey(bio, nil, nil, $0.baseAddress) }
        }
        OpenSSL.drainErrors()
        guard let key = parsed else {
            throw SigningKeyError(.malformed, "the PEM private key could not be parsed (truncated or corrupt base64/DER)")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            throw SigningKeyError(.notEC, "the private key is not an EC key; App Store Connect keys are EC P-256")
        }
        var name = [CChar](repeating: 0, count: 64)
        var len = 0
        let ok = EVP_PKEY_get_group_name(key, &name, name.count, &len) == 1
        let group = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard ok, group == "prime256v1" else {
            EVP_PKEY_free(key)
            throw SigningKeyError(.wrongCurve, "the EC key is on curve \(ok ? group : "unknown"); ES256 requires P-256 (prime256v1)")
        }
        self.pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// ECDSA P-256 over SHA-256 of `message`, DER-encoded (the form of promotional offer v1 signatures).
    func signDER(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
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

    /// JOSE ES256 signature (64-byte r||s).
    func signJOSE(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let der = signDER(message) else { return nil }
        return ES256.derToRaw(der)
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
