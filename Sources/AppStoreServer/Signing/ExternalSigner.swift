import COpenSSL

/// Signs with a private key held outside the process — a KMS or an HSM — for every signature the library makes
/// (API bearer tokens, promotional offers v1 and v2, introductory-offer eligibility, Advanced Commerce requests).
/// The library builds the header and claims (or the v1 payload) and asks for the ECDSA P-256 / SHA-256 signature of
/// `message`; `digest` is SHA-256(`message`) for signers that take a digest (AWS KMS `MessageType: DIGEST`, PKCS#11
/// `CKM_ECDSA`). Return the signature as 64 bytes r‖s (JOSE) or as DER (what KMS and most HSMs return).
///
/// Called on the thread that asked for the signature, possibly from several threads at once. A thrown error fails that
/// signature with reason `signerFailed` and the error's description in the message.
public protocol ES256Signer: Sendable {
    /// The ECDSA P-256 signature of SHA-256(`message`) (`digest` is that hash), as r‖s or DER.
    func sign(message: [UInt8], digest: [UInt8]) throws -> [UInt8]
    /// As `sign(message:digest:)`, with the time the signature may take: the key's signer timeout, or less when an
    /// API call's deadline is nearer (what is left of the client's timeout). A signature that comes later is
    /// discarded; a signer that can bound its own wait (a KMS client's timeout) should use it. By default it calls
    /// `sign(message:digest:)`.
    func sign(message: [UInt8], digest: [UInt8], timeoutMilliseconds: UInt32) throws -> [UInt8]
}

extension ES256Signer {
    /// The default: the signer is not told its time, `sign(message:digest:)` is called (a late answer is still
    /// discarded by the caller).
    public func sign(message: [UInt8], digest: [UInt8], timeoutMilliseconds: UInt32) throws -> [UInt8] {
        try sign(message: message, digest: digest)
    }
}

/// What a signer returned, checked and brought into the two forms the library needs.
enum ExternalSignature {
    /// P-256's group order n: r and s must lie in [1, n-1].
    private static let order: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF,
                                         0xFF, 0xFF, 0xFF, 0xFF, 0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84,
                                         0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]

    /// 64 bytes r‖s from a raw or DER signature, or nil when it is neither (or r, s are out of range).
    static func raw(_ signature: [UInt8]) -> [UInt8]? {
        let r: [UInt8]
        if signature.count == 64 {
            r = signature
        } else {
            guard let fromDER = derToRawStrict(signature) else { return nil }
            r = fromDER
        }
        return inRange(r[0..<32]) && inRange(r[32..<64]) ? r : nil
    }

    private static func inRange(_ x: ArraySlice<UInt8>) -> Bool {
        guard x.contains(where: { $0 != 0 }) else { return false }
        for (a, b) in zip(x, order) where a != b { return a < b }
        return false  // equal to n
    }

    /// DER that must be exactly one ECDSA-Sig-Value (nothing after it).
    private static func derToRawStrict(_ der: [UInt8]) -> [UInt8]? {
        guard !der.isEmpty, der.count <= 72 else { return nil }
        let whole: Bool = der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let start = p, let sig = d2i_ECDSA_SIG(nil, &p, buf.count) else { return false }
            ECDSA_SIG_free(sig)
            return p.map { $0 - start == buf.count } ?? false
        }
        OpenSSL.drainErrors()
        return whole ? ES256.derToRaw(der) : nil
    }
}
