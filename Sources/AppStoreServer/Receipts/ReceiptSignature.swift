import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A receipt's PKCS#7 SignedData as OpenSSL parses it (owned; freed in deinit). Used for one verification only.
final class PKCS7Receipt {
    let p7: UnsafeMutablePointer<PKCS7>

    init(der: [UInt8]) throws(ReceiptError) {
        guard der.count <= Int(Int32.max) else { throw ReceiptError(.receiptMalformed, "receipt too large for OpenSSL") }
        var trailing = false
        let parsed = der.withUnsafeBufferPointer { buf -> UnsafeMutablePointer<PKCS7>? in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let start = p, let x = d2i_PKCS7(nil, &p, buf.count) else { return nil }
            if let end = p, end - start != buf.count { trailing = true; PKCS7_free(x); return nil }
            return x
        }
        guard let parsed else {
            let why = OpenSSL.drainErrors()
            throw ReceiptError(.receiptMalformed, trailing ? "OpenSSL's PKCS#7 parser stops before the end of the receipt"
                : "OpenSSL cannot parse the receipt as PKCS#7" + (why.map { " (\($0))" } ?? ""))
        }
        guard appstore_shim_pkcs7_is_signed(parsed) == 1 else {
            PKCS7_free(parsed)
            throw ReceiptError(.receiptMalformed, "the receipt is PKCS#7 but not SignedData")
        }
        p7 = parsed
    }

    deinit { PKCS7_free(p7) }

    /// The certificates the receipt carries (borrowed from the PKCS#7 object), or nil when it carries none.
    var certificates: OpaquePointer? { appstore_shim_pkcs7_certificates(p7) }

    /// The certificate of the receipt's one signer (borrowed from the PKCS#7 object).
    func signer() throws(ReceiptError) -> OpaquePointer {
        let n = appstore_shim_pkcs7_signer_count(p7)
        guard n > 0 else { throw ReceiptError(.signerMissing, "the receipt has no SignerInfo: it is not signed") }
        guard n == 1 else {
            throw ReceiptError(.receiptMalformed, "the receipt has \(n) SignerInfos; an app receipt has exactly one")
        }
        guard let signers = PKCS7_get0_signers(p7, nil, 0) else {
            OpenSSL.drainErrors()
            throw ReceiptError(.signerMissing,
                "the receipt does not carry the certificate of its signer (no certificate matches the SignerInfo's issuer and serial number)")
        }
        defer { appstore_shim_sk_X509_free(signers) }
        guard appstore_shim_sk_X509_num(signers) == 1, let x = appstore_shim_sk_X509_value(signers, 0) else {
            throw ReceiptError(.signerMissing, "OpenSSL found no signer certificate")
        }
        return x
    }

    /// Checks the signature of the one SignerInfo over the encapsulated content with the signer certificate's key
    /// (the chain is checked separately) and returns the content that was verified.
    func verifiedContent() throws(ReceiptError) -> [UInt8] {
        guard let out = BIO_new(BIO_s_mem()) else { throw ReceiptError(.internal, "OpenSSL could not allocate a BIO") }
        defer { BIO_free(out) }
        guard PKCS7_verify(p7, nil, nil, nil, out, Int32(PKCS7_NOVERIFY | PKCS7_BINARY)) == 1 else {
            let why = OpenSSL.drainErrors() ?? "no detail"
            let what = why.contains("digest failure") ? "the signed content does not match the digest it was signed with"
                : "the signature does not verify with the signer certificate's key"
            throw ReceiptError(.badSignature, "receipt signature: \(what) (OpenSSL: \(why))")
        }
        var data: UnsafeMutablePointer<CChar>?
        let n = appstore_shim_bio_get_mem_data(out, &data)
        guard n >= 0 else { throw ReceiptError(.internal, "OpenSSL returned no verified content") }
        guard n > 0, let data else { return [] }
        return UnsafeRawBufferPointer(start: data, count: Int(n)).map { $0 }
    }
}

/// The receipt signer's chain: signer <- an intermediate the receipt carries <- one of the caller's roots, valid at
/// the given time, with Apple's marker extensions (receipt signing 1.2.840.113635.100.6.11.1 on the signer, WWDR
/// 1.2.840.113635.100.6.2.1 on the intermediate).
enum ReceiptChainVerifier {
    /// Returns the signer's subject on success. `time` nil: validity periods are not checked (used only to report
    /// trust, shape and marker failures before a receipt whose signed creation date is unreadable is rejected).
    static func verify(signer: OpaquePointer, untrusted: OpaquePointer?, trust: TrustStore,
                       at time: Int64?) throws(ReceiptError) -> String {
        guard let ctx = X509_STORE_CTX_new() else {
            throw ReceiptError(.internal, "OpenSSL could not allocate a verification context")
        }
        defer { X509_STORE_CTX_free(ctx) }
        guard X509_STORE_CTX_init(ctx, trust.store, signer, untrusted) == 1 else {
            OpenSSL.drainErrors()
            throw ReceiptError(.internal, "OpenSSL could not initialise chain verification")
        }
        if let time {
            X509_STORE_CTX_set_time(ctx, 0, time_t(time))
        } else {
            X509_STORE_CTX_set_flags(ctx, UInt(X509_V_FLAG_NO_CHECK_TIME))
        }
        if X509_verify_cert(ctx) != 1 {
            let code = X509_STORE_CTX_get_error(ctx)
            let depth = X509_STORE_CTX_get_error_depth(ctx)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            OpenSSL.drainErrors()
            let which = depth == 0 ? "receipt signing certificate" : depth == 1 ? "intermediate certificate"
                : "certificate at depth \(depth)"
            switch code {
            case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID:
                throw ReceiptError(.expired,
                    "\(which) is not valid at the effective date \(Timestamp.iso8601(time ?? 0)): \(text)")
            default:
                throw ReceiptError(.untrustedChain, "the receipt's signer does not chain to a trusted root (\(which)): \(text)")
            }
        }
        guard let chain = X509_STORE_CTX_get0_chain(ctx) else {
            throw ReceiptError(.internal, "OpenSSL returned no verified chain")
        }
        let count = appstore_shim_sk_X509_num(chain)
        guard count == 3 else {
            throw ReceiptError(.untrustedChain,
                "the verified chain has \(count) certificates; a receipt's is exactly signer, intermediate, root")
        }
        guard let leafMarker = ObjectIdentifiers.leafMarkerObject.obj,
              let intermediateMarker = ObjectIdentifiers.intermediateMarkerObject.obj,
              let intermediate = appstore_shim_sk_X509_value(chain, 1) else {
            throw ReceiptError(.internal, "OpenSSL could not create the marker OIDs")
        }
        guard X509_get_ext_by_OBJ(signer, leafMarker, -1) >= 0 else {
            throw ReceiptError(.missingMarkerOID,
                "the receipt signing certificate lacks Apple's marker extension \(ObjectIdentifiers.leafMarker)")
        }
        guard X509_get_ext_by_OBJ(intermediate, intermediateMarker, -1) >= 0 else {
            throw ReceiptError(.missingMarkerOID,
                "the intermediate certificate lacks Apple's WWDR marker extension \(ObjectIdentifiers.intermediateMarker)")
        }
        guard let name = X509_get_subject_name(signer), let cstr = X509_NAME_oneline(name, nil, 0) else { return "?" }
        defer { appstore_shim_openssl_free(cstr) }
        return String(cString: cstr)
    }
}
