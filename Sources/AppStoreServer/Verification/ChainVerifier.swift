import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A leaf + intermediate that chained to a trusted root, with what later payloads need to reuse the result.
final class VerifiedChain: @unchecked Sendable {
    let leaf: Certificate
    let intermediate: Certificate
    /// The caller's root the chain was built to (the issuer online checks ask about the intermediate against).
    let root: Certificate
    /// The window in which every certificate of the built chain is valid (seconds since 1970).
    let notBefore: Int64
    let notAfter: Int64
    /// The leaf's P-256 key, owned by `leaf`.
    let leafKey: OpaquePointer

    init(leaf: Certificate, intermediate: Certificate, root: Certificate, notBefore: Int64, notAfter: Int64,
         leafKey: OpaquePointer) {
        self.leaf = leaf
        self.intermediate = intermediate
        self.root = root
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.leafKey = leafKey
    }

    func isValid(at time: Int64) -> Bool { notBefore <= time && time <= notAfter }
}

/// Validates Apple's chain shape with OpenSSL: leaf <- intermediate <- one of the caller's roots, at a given time,
/// with Apple's marker extensions and a P-256 leaf key.
enum ChainVerifier {
    static func verify(leaf: Certificate, intermediate: Certificate, trust: TrustStore,
                       at time: Int64) -> Result<VerifiedChain, VerificationFailure> {
        // OpenSSL borrows the X509 pointers of these objects for the whole verification.
        withExtendedLifetime((leaf, intermediate, trust)) { verifyBorrowed(leaf: leaf, intermediate: intermediate, trust: trust, at: time) }
    }

    private static func verifyBorrowed(leaf: Certificate, intermediate: Certificate, trust: TrustStore,
                                       at time: Int64) -> Result<VerifiedChain, VerificationFailure> {
        guard let ctx = X509_STORE_CTX_new() else {
            return .failure(VerificationFailure(.internal, "OpenSSL could not allocate a verification context"))
        }
        defer { X509_STORE_CTX_free(ctx) }
        guard let untrusted = appstore_shim_sk_X509_new_null() else {
            return .failure(VerificationFailure(.internal, "OpenSSL could not allocate a certificate stack"))
        }
        defer { appstore_shim_sk_X509_free(untrusted) }
        _ = appstore_shim_sk_X509_push(untrusted, intermediate.x509)

        guard X509_STORE_CTX_init(ctx, trust.store, leaf.x509, untrusted) == 1 else {
            OpenSSL.drainErrors()
            return .failure(VerificationFailure(.internal, "OpenSSL could not initialise chain verification"))
        }
        X509_STORE_CTX_set_time(ctx, 0, time_t(time))
        // RFC 5280 as Apple's Python library applies it (X509_STRICT): CAs with critical basicConstraints, keyUsage
        // and a subject key id, key ids linking each certificate to its issuer, no CA bits on the leaf, ... Apple's
        // chains pass; see docs/verification.md for each check.
        X509_STORE_CTX_set_flags(ctx, UInt(X509_V_FLAG_X509_STRICT))
        if X509_verify_cert(ctx) != 1 {
            let code = X509_STORE_CTX_get_error(ctx)
            let depth = X509_STORE_CTX_get_error_depth(ctx)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            OpenSSL.drainErrors()
            let which = depth == 0 ? "leaf" : depth == 1 ? "intermediate" : "certificate at depth \(depth)"
            switch code {
            case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID:
                return .failure(VerificationFailure(.expired,
                    "\(which) certificate is not valid at the effective date \(Timestamp.iso8601(time)): \(text)"))
            default:
                return .failure(VerificationFailure(.untrustedChain,
                    "certificate chain does not lead to a trusted root (\(which)): \(text)"))
            }
        }
        guard let chain = X509_STORE_CTX_get0_chain(ctx) else {
            return .failure(VerificationFailure(.internal, "OpenSSL returned no verified chain"))
        }
        let count = appstore_shim_sk_X509_num(chain)
        guard count == 3 else {
            return .failure(VerificationFailure(.untrustedChain,
                "the verified chain has \(count) certificates; Apple's is exactly leaf, intermediate, root"))
        }
        // The chain OpenSSL built must be the one the JWS carries: depth 1 is x5c[1] itself, not another certificate
        // that happens to sit in the trust store (a non-self-signed CA configured as a root would otherwise let an
        // unrelated, marked x5c[1] lend its marker to a chain it is not part of).
        guard let first = appstore_shim_sk_X509_value(chain, 0), X509_cmp(first, leaf.x509) == 0,
              let second = appstore_shim_sk_X509_value(chain, 1), X509_cmp(second, intermediate.x509) == 0 else {
            return .failure(VerificationFailure(.untrustedChain,
                "the verified chain is not the one the JWS carries: depth 1 is not x5c[1] (intermediate)"))
        }
        guard let top = appstore_shim_sk_X509_value(chain, 2),
              let root = trust.roots.first(where: { X509_cmp($0.x509, top) == 0 }) else {
            return .failure(VerificationFailure(.internal, "the verified chain does not end at one of the configured roots"))
        }
        guard let leafMarker = ObjectIdentifiers.leafMarkerObject.obj,
              let intermediateMarker = ObjectIdentifiers.intermediateMarkerObject.obj else {
            return .failure(VerificationFailure(.internal, "OpenSSL could not create the marker OIDs"))
        }
        guard leaf.hasExtension(leafMarker) else {
            return .failure(VerificationFailure(.missingMarkerOID,
                "leaf certificate lacks Apple's App Store marker extension \(ObjectIdentifiers.leafMarker)"))
        }
        guard intermediate.hasExtension(intermediateMarker) else {
            return .failure(VerificationFailure(.missingMarkerOID,
                "intermediate certificate lacks Apple's WWDR marker extension \(ObjectIdentifiers.intermediateMarker)"))
        }
        guard let key = leaf.p256PublicKey else {
            return .failure(VerificationFailure(.badCertificate, "leaf certificate key is not an EC P-256 key (ES256 requires P-256)"))
        }
        var notBefore = Int64.min, notAfter = Int64.max
        for i in 0..<count {
            guard let x = appstore_shim_sk_X509_value(chain, i),
                  let nb = X509_get0_notBefore(x), let na = X509_get0_notAfter(x) else { continue }
            var tb = tm(), ta = tm()
            guard ASN1_TIME_to_tm(nb, &tb) == 1, ASN1_TIME_to_tm(na, &ta) == 1 else {
                return .failure(VerificationFailure(.badCertificate, "certificate \(i) of the chain has an unreadable validity period"))
            }
            notBefore = max(notBefore, Int64(timegm(&tb)))
            notAfter = min(notAfter, Int64(timegm(&ta)))
        }
        return .success(VerifiedChain(leaf: leaf, intermediate: intermediate, root: root,
                                      notBefore: notBefore, notAfter: notAfter, leafKey: key))
    }
}
