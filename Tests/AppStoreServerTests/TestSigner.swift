import Foundation
import COpenSSL
@testable import AppStoreServer

/// Test-only JWS signer over the PKI from Tests/support/testpki.py: lets tests sign payloads of their own.
final class TestSigner: @unchecked Sendable {
    let key: OpaquePointer
    let x5c: [String]
    let root: [UInt8]

    init(dir: URL = Paths.testPKI, leaf: String = "leaf.der", keyFile: String = "leaf_key.pem") throws {
        let pem = try Data(contentsOf: dir.appendingPathComponent(keyFile))
        let bio = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        defer { BIO_free(bio) }
        guard let k = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw CocoaError(.fileReadCorruptFile) }
        key = k
        let der = { (name: String) throws -> Data in try Data(contentsOf: dir.appendingPathComponent(name)) }
        x5c = try [leaf, "intermediate.der", "root.der"].map { try der($0).base64EncodedString() }
        root = [UInt8](try der("root.der"))
    }
    deinit { EVP_PKEY_free(key) }

    static func b64url(_ d: Data) -> String {
        d.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Compact JWS with header {alg, x5c, typ} over `payload` (a JSON object literal), JOSE r||s signature.
    func sign(_ payload: [String: Any], header: [String: Any]? = nil) throws -> String {
        let h = header ?? ["alg": "ES256", "x5c": x5c, "typ": "JWT"]
        // Sorted keys: Apple sends byte-identical headers for one key, and the chain cache keys on those bytes.
        let input = Self.b64url(try JSONSerialization.data(withJSONObject: h, options: [.sortedKeys])) + "." +
            Self.b64url(try JSONSerialization.data(withJSONObject: payload))
        return input + "." + Self.b64url(Data(try rawSignature(Array(input.utf8))))
    }

    func rawSignature(_ message: [UInt8]) throws -> [UInt8] {
        let ctx = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { throw CocoaError(.featureUnsupported) }
        var len = 0
        guard EVP_DigestSign(ctx, nil, &len, message, message.count) == 1 else { throw CocoaError(.featureUnsupported) }
        var der = [UInt8](repeating: 0, count: len)
        guard EVP_DigestSign(ctx, &der, &len, message, message.count) == 1 else { throw CocoaError(.featureUnsupported) }
        var p: UnsafePointer<UInt8>? = der.withUnsafeBufferPointer { $0.baseAddress }
        let sig = der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var q: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &q, len)
        }
        _ = p; p = nil
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        out.withUnsafeMutableBufferPointer { o in
            _ = BN_bn2binpad(ECDSA_SIG_get0_r(sig), o.baseAddress, 32)
            _ = BN_bn2binpad(ECDSA_SIG_get0_s(sig), o.baseAddress! + 32, 32)
        }
        return out
    }

    static let bundleId = "com.example.testpki"

    /// A transaction payload with a given signed date (ms) and extra keys.
    static func transaction(signedDate: Double = 1_748_736_000_000, extra: [String: Any] = [:]) -> [String: Any] {
        var p: [String: Any] = [
            "transactionId": "2000000000000001", "originalTransactionId": "2000000000000001",
            "bundleId": bundleId, "productId": "com.example.testpki.monthly", "purchaseDate": 1_748_735_000_000,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "quantity": 1,
            "signedDate": signedDate, "environment": "Sandbox", "price": 4990, "currency": "EUR",
        ]
        for (k, v) in extra { p[k] = v }
        return p
    }

    func verifier(cache: ChainCacheConfiguration = .default, environment: AppStoreEnvironment = .sandbox,
                  appAppleId: Int64? = nil) throws -> SignedDataVerifier {
        try SignedDataVerifier(rootCertificates: [root], bundleId: Self.bundleId, appAppleId: appAppleId,
                               environment: environment, enableOnlineChecks: false, chainCache: cache)
    }
}
