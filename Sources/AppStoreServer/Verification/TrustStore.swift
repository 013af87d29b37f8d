import COpenSSL

/// The caller's root certificates as an OpenSSL X509_STORE: the only trust anchors (x5c[2] is never used).
final class TrustStore: @unchecked Sendable {
    let store: OpaquePointer
    let roots: [Certificate]

    /// - Parameter allowEmpty: no roots is fine (environments that skip signature checks, as Apple's libraries allow).
    init(rootCertificates: [[UInt8]], allowEmpty: Bool = false) throws(ConfigurationError) {
        guard !rootCertificates.isEmpty || allowEmpty else {
            throw ConfigurationError(.noTrustAnchor, "no root certificates: at least one trusted root (DER or PEM) is required")
        }
        var roots: [Certificate] = []
        for (i, input) in rootCertificates.enumerated() {
            guard let ders = CertificateInput.ders(input) else {
                throw ConfigurationError(.badCertificate, "root certificate \(i) is PEM text whose CERTIFICATE blocks do not decode")
            }
            for der in ders {
                guard let cert = Certificate(der: der) else {
                    throw ConfigurationError(.badCertificate, ders.count == 1 && ders[0] == input
                        ? "root certificate \(i) is not a DER X.509 certificate (nor PEM text)"
                        : "root certificate \(i): a PEM block is not an X.509 certificate")
                }
                roots.append(cert)
            }
        }
        guard let store = X509_STORE_new() else {
            throw ConfigurationError(.internal, "OpenSSL could not allocate a certificate store")
        }
        for cert in roots where X509_STORE_add_cert(store, cert.x509) != 1 {
            // Adding the same certificate twice is harmless; anything else is not.
            OpenSSL.drainErrors()
        }
        self.store = store
        self.roots = roots
    }

    deinit { X509_STORE_free(store) }
}
