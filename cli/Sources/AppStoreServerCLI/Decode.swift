import AppStoreServer
import ArgumentParser
import FoundationEssentials

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a signed payload says about itself, WITHOUT verifying anything (for debugging).",
        discussion: """
            Prints the header, the payload, the kind its keys suggest and each x5c certificate's subject, issuer, \
            serial, validity and SHA-256 fingerprint; signed values nested in the payload (a notification's \
            signedTransactionInfo, …) are decoded too. Nothing is checked: anyone can write such a payload. Use \
            `appstoreserver verify` to know whether Apple signed it. The output says "verified": false, and stderr \
            says so too.

            EXAMPLE
              appstoreserver decode notification.json | jq '.certificates[].notAfter'
            """
    )

    @Argument(help: ArgumentHelp("The signed data, or - (the default) for stdin.", valueName: "file"))
    var file: String?
    @OptionGroup var output: OutputOptions

    func run() throws {
        try reporting {
            let input = try Input.signedPayload(try Input.read(file, what: "a signed payload"))
            Output.error("NOT VERIFIED: decode checks nothing (signature, chain, identity); use `appstoreserver verify`")
            Output.json(Array(try Self.describe(input.jws, nested: true).utf8), output)
        }
    }

    static func describe(_ jws: String, nested: Bool) throws(ToolFailure) -> String {
        let u: UnverifiedSignedData
        switch UnverifiedSignedData.read(jws) {
        case .success(let v): u = v
        case .failure(let f): throw ToolFailure(f)
        }
        let certificates = u.certificates.map { result -> String in
            switch result {
            case .success(let c):
                return JSONText.object([
                    ("subject", JSONText.string(c.subject)), ("issuer", JSONText.string(c.issuer)),
                    ("serialNumber", JSONText.string(c.serialNumber)),
                    ("notBefore", c.notBefore.map { JSONText.string(iso8601($0)) } ?? "null"),
                    ("notAfter", c.notAfter.map { JSONText.string(iso8601($0)) } ?? "null"),
                    ("sha256", JSONText.string(c.sha256Fingerprint)),
                ])
            case .failure(let f):
                return JSONText.object([("error", JSONText.string(f.message))])
            }
        }
        let payloadText = String(decoding: u.payloadJSON, as: UTF8.self)
        // JSON as JSONSerialization took it: an object or an array at the top.
        let payloadObject = JSONValue.parse(u.payloadJSON).flatMap { $0.isContainer ? $0 : nil }
        let payloadIsJSON = payloadObject != nil
        var members: [(String, String)] = [
            ("verified", "false"),
            ("kind", u.kind.map { JSONText.string($0.rawValue) } ?? "null"),
            ("header", String(decoding: u.headerJSON, as: UTF8.self)),
            ("payload", payloadIsJSON ? payloadText : JSONText.string(payloadText)),
            ("certificates", JSONText.array(certificates)),
        ]
        if nested, let payloadObject {
            var inner: [(String, String)] = []
            for (path, value) in signedValues(in: payloadObject) {
                inner.append((path, (try? describe(value, nested: false)) ?? JSONText.object([("error", JSONText.string("not a compact JWS"))])))
            }
            if !inner.isEmpty { members.append(("nested", JSONText.object(inner))) }
        }
        return JSONText.object(members)
    }

    /// `signed…` string members anywhere in the payload, with their dotted paths.
    static func signedValues(in root: JSONValue) -> [(String, String)] {
        var found: [(String, String)] = []
        func walk(_ value: JSONValue, _ path: String) {
            switch value {
            case .object(let members):
                // Keys in order (a key given twice: its first value, as in a dictionary).
                var seen: Set<String> = []
                for (key, member) in members.sorted(by: { $0.0 < $1.0 }) where seen.insert(key).inserted {
                    let child = path.isEmpty ? key : "\(path).\(key)"
                    if key.hasPrefix("signed"), let s = member.stringValue, s.split(separator: ".").count == 3 {
                        found.append((child, s))
                    } else {
                        walk(member, child)
                    }
                }
            case .array(let items):
                for (i, item) in items.enumerated() { walk(item, "\(path)[\(i)]") }
            default:
                break
            }
        }
        walk(root, "")
        return found
    }
}

struct Roots: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the bundled Apple root certificates (PEM) after checking their SHA-256 fingerprints.")

    func run() throws {
        try reporting {
            for root in [AppleRoot.g3, AppleRoot.incRoot] {
                let der = try root.der()
                let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
                Output.line("# \(root.name)\n# SHA-256 \(try root.certificate().sha256Fingerprint)\n-----BEGIN CERTIFICATE-----\n\(b64)\n-----END CERTIFICATE-----")
            }
        }
    }
}
