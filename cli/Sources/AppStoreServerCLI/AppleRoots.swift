import AppStoreServer

/// The tool's default trust anchors: Apple's roots as the library carries them (`AppleRootCertificate`, each checked
/// against the SHA-256 fingerprint Apple publishes before it is used; an altered copy is absent, never trusted).
struct AppleRoot {
    let name: String

    /// Apple Root CA - G3: the anchor of every App Store signed payload (JWS).
    static let g3 = AppleRoot(name: "Apple Root CA - G3")
    /// Apple Inc. Root (Apple Root CA): the anchor of legacy app receipts.
    static let incRoot = AppleRoot(name: "Apple Inc. Root")

    /// The checked certificate.
    func certificate() throws(ToolFailure) -> AppleRootCertificate {
        guard let root = AppleRootCertificate.all.first(where: { $0.name == name }) else {
            throw ToolFailure(.configuration, status: "CONFIGURATION_ERROR", reason: "bad_certificate",
                              "the bundled \(name) does not match Apple's published SHA-256: refusing to trust it")
        }
        return root
    }

    /// The DER bytes, after the fingerprint check.
    func der() throws(ToolFailure) -> [UInt8] { try certificate().der }
}

/// The trust anchors of a command: the files named with --root, else the bundled Apple root.
func trustAnchors(_ paths: [String], default root: AppleRoot) throws(ToolFailure) -> (ders: [[UInt8]], names: String) {
    guard !paths.isEmpty else { return ([try root.der()], root.name) }
    var ders: [[UInt8]] = []
    for path in paths { ders += try Input.certificates(path) }
    return (ders, paths.joined(separator: ", "))
}
