import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

// Thin owners of OpenSSL objects. Each owns one reference and frees it in deinit. They are immutable after
// construction; OpenSSL 3 allows concurrent read-only use (verification) of X509 / EVP_PKEY / X509_STORE.

enum OpenSSL {
    /// Empties this thread's OpenSSL error queue and returns its last entry as text (for messages only).
    @discardableResult
    static func drainErrors() -> String? {
        var last: String?
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            last = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return last
    }
}

/// An X.509 certificate parsed by OpenSSL from DER.
final class Certificate: @unchecked Sendable {
    let x509: OpaquePointer
    let der: [UInt8]

    /// Parses exactly one DER certificate; trailing bytes are an error.
    init?(der: [UInt8]) {
        guard !der.isEmpty, der.count <= Int(Int32.max) else { return nil }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let start = p, let x = d2i_X509(nil, &p, buf.count) else { return nil }
            if let end = p, end - start != buf.count { X509_free(x); return nil }
            return x
        }
        guard let x = parsed else { OpenSSL.drainErrors(); return nil }
        self.x509 = x
        self.der = der
    }

    deinit { X509_free(x509) }

    /// Seconds since 1970 of notBefore / notAfter, or nil when OpenSSL cannot read the time.
    var validity: (notBefore: Int64, notAfter: Int64)? {
        guard let nb = X509_get0_notBefore(x509), let na = X509_get0_notAfter(x509),
              let b = Certificate.seconds(nb), let a = Certificate.seconds(na) else { return nil }
        return (b, a)
    }

    private static func seconds(_ t: UnsafePointer<ASN1_TIME>) -> Int64? {
        var tm = Glibc.tm()
        guard ASN1_TIME_to_tm(t, &tm) == 1 else { return nil }
        return Int64(timegm(&tm))
    }

    func hasExtension(_ oid: OpaquePointer) -> Bool {
        X509_get_ext_by_OBJ(x509, oid, -1) >= 0
    }

    var subjectDescription: String {
        guard let name = X509_get_subject_name(x509), let cstr = X509_NAME_oneline(name, nil, 0) else { return "?" }
        defer { appstore_shim_openssl_free(cstr) }
        return String(cString: cstr)
    }

    /// The public key if it is an EC key on P-256 (the only key ES256 allows).
    var p256PublicKey: OpaquePointer? {
        guard let key = X509_get0_pubkey(x509), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var len = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &len) == 1 else { return nil }
        let group = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" ? key : nil
    }
}

enum ObjectIdentifiers {
    /// Apple's App Store receipt-signing leaf marker.
    static let leafMarker = "1.2.840.113635.100.6.11.1"
    /// Apple's WWDR intermediate marker.
    static let intermediateMarker = "1.2.840.113635.100.6.2.1"

    final class Handle: @unchecked Sendable {
        let obj: OpaquePointer?
        init(_ dotted: String) { obj = OBJ_txt2obj(dotted, 1) }
        deinit { if let obj { ASN1_OBJECT_free(obj) } }
    }
    static let leafMarkerObject = Handle(leafMarker)
    static let intermediateMarkerObject = Handle(intermediateMarker)
}

enum ES256 {
    /// SHA-256 fetched once: EVP_sha256() in EVP_DigestVerifyInit costs an implicit provider fetch per call.
    private final class Digest: @unchecked Sendable {
        let md: OpaquePointer?
        init() { md = EVP_MD_fetch(nil, "SHA256", nil) }
    }
    private static let sha256 = Digest()

    /// The fetched SHA-256 (EVP_sha256() when the fetch failed): for every digest the library computes.
    static var sha256MD: OpaquePointer? { sha256.md ?? EVP_sha256() }

    /// Verifies a JOSE ES256 signature (64-byte big-endian r||s) over `message` with a P-256 key.
    static func verify(publicKey: OpaquePointer, signature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == 64, let md = sha256.md, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        let der = rawToDER(signature)
        guard EVP_DigestVerifyInit(ctx, nil, md, nil, publicKey) == 1 else {
            OpenSSL.drainErrors(); return false
        }
        let ok = der.withUnsafeBufferPointer { d in
            EVP_DigestVerify(ctx, d.baseAddress, d.count, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                             message.count)
        }
        if ok != 1 { OpenSSL.drainErrors() }
        return ok == 1
    }

    /// JOSE r||s (64 bytes) -> DER ECDSA-Sig-Value, SEQUENCE { INTEGER r, INTEGER s }, as OpenSSL's EVP expects.
    /// Minimal INTEGER encoding: leading zero bytes dropped, one 0x00 added when the high bit is set.
    static func rawToDER(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var v = bytes.drop { $0 == 0 }
            if v.isEmpty { v = [0] }
            let body = (v.first.map { $0 & 0x80 != 0 } ?? false) ? [0] + Array(v) : Array(v)
            return [0x02, UInt8(body.count)] + body
        }
        let content = integer(raw.prefix(32)) + integer(raw.dropFirst(32).prefix(32))
        return [0x30, UInt8(content.count)] + content
    }
}
