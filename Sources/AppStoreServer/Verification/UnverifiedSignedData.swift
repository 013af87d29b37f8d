import COpenSSL
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// A compact JWS read WITHOUT any verification: its header and payload JSON, the kind of payload its keys suggest,
/// and what its `x5c` certificates say about themselves. For debugging and for choosing how to verify (the
/// `appstoreserver decode` command); nothing here may be trusted, and nothing here is used by verification.
public struct UnverifiedSignedData: Sendable, Hashable {
    /// The header JSON as sent (decoded from base64url).
    public let headerJSON: [UInt8]
    /// The payload JSON as sent (decoded from base64url).
    public let payloadJSON: [UInt8]
    /// The kind the payload's top-level keys suggest (the rule verification uses to explain a wrong kind), or nil.
    public let kind: SignedPayloadKind?
    /// `alg` of the header, when it is a string.
    public let algorithm: String?
    /// The `x5c` certificates in order (leaf first); an entry that is not a certificate is described as such.
    public let certificates: [Result<CertificateInfo, VerificationFailure>]

    /// Splits and decodes `jws`. Fails only when it is not a compact JWS with base64url segments and a JSON header,
    /// or is larger than `maxBytes` (the verifier's limit by default).
    public static func read(_ jws: String, maxBytes: Int = SignedDataVerifier.defaultMaxJWSBytes) -> Result<UnverifiedSignedData, VerificationFailure> {
        var text = jws
        return text.withUTF8 { utf8 in
            guard utf8.count <= maxBytes else {
                return .failure(VerificationFailure(.inputTooLarge, "the JWS is \(utf8.count) bytes, above the limit of \(maxBytes)"))
            }
            let split: CompactJWS
            switch CompactJWS.split(UnsafeRawBufferPointer(utf8)) {
            case .success(let s): split = s
            case .failure(let f): return .failure(f)
            }
            let header: CompactJWS.Header
            switch split.decodeHeader() {
            case .success(let h): header = h
            case .failure(let f): return .failure(f)
            }
            let headerJSON = Base64.decode(split.headerSegment, alphabet: .url) ?? []
            let kind = (try? JSONParser.parse(split.payload)).flatMap { PayloadProbe($0) }?.kind
            let certificates = (header.x5c ?? []).enumerated().map { index, b64 -> Result<CertificateInfo, VerificationFailure> in
                guard let der = Base64.decode(b64, alphabet: .standard), let info = CertificateInfo(der: der) else {
                    return .failure(VerificationFailure(.malformed, "x5c[\(index)] is not a base64 DER certificate"))
                }
                return .success(info)
            }
            return .success(UnverifiedSignedData(headerJSON: headerJSON, payloadJSON: split.payload, kind: kind,
                                                 algorithm: header.alg, certificates: certificates))
        }
    }
}

/// What an X.509 certificate says about itself (nothing checked): names, serial, validity and fingerprint.
public struct CertificateInfo: Sendable, Hashable {
    /// OpenSSL's one-line form, e.g. `/CN=Apple Root CA - G3/OU=Apple Certification Authority/O=Apple Inc./C=US`.
    public let subject: String
    /// The issuer's name, in the same form as `subject`.
    public let issuer: String
    /// The serial number in upper-case hex.
    public let serialNumber: String
    /// The start of the validity period (nil when it cannot be read).
    public let notBefore: Date?
    /// The end of the validity period (nil when it cannot be read).
    public let notAfter: Date?
    /// SHA-256 of the DER, upper-case hex pairs separated by colons (the form Apple publishes for its roots).
    public let sha256Fingerprint: String
    /// The certificate's DER.
    public let der: [UInt8]

    /// nil when `der` is not exactly one DER certificate.
    public init?(der: [UInt8]) {
        guard let cert = Certificate(der: der) else { return nil }
        subject = Self.name(X509_get_subject_name(cert.x509))
        issuer = Self.name(X509_get_issuer_name(cert.x509))
        serialNumber = Self.serial(cert.x509)
        let validity = cert.validity
        notBefore = validity.map { Date(timeIntervalSince1970: Double($0.notBefore)) }
        notAfter = validity.map { Date(timeIntervalSince1970: Double($0.notAfter)) }
        sha256Fingerprint = Self.fingerprint(der)
        self.der = der
    }

    private static func name(_ name: OpaquePointer?) -> String {
        guard let name, let cstr = X509_NAME_oneline(name, nil, 0) else { return "?" }
        defer { appstore_shim_openssl_free(cstr) }
        return String(cString: cstr)
    }

    private static func serial(_ x509: OpaquePointer) -> String {
        guard let integer = X509_get0_serialNumber(x509), let bn = ASN1_INTEGER_to_BN(integer, nil) else { return "?" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "?" }
        defer { appstore_shim_openssl_free(hex) }
        return String(cString: hex)
    }

    static func fingerprint(_ der: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = der.withUnsafeBufferPointer { d in
            EVP_Digest(d.baseAddress, d.count, &digest, &length, EVP_sha256(), nil)
        }
        guard ok == 1, length == 32 else { OpenSSL.drainErrors(); return "?" }
        let digits = Array("0123456789ABCDEF".utf8)
        return digest.map { String(decoding: [digits[Int($0 >> 4)], digits[Int($0 & 15)]], as: UTF8.self) }
            .joined(separator: ":")
    }
}
