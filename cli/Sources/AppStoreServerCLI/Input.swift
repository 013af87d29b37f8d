import AppStoreServer
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

enum Input {
    /// Largest input read (receipts may be large; a JWS is refused by the verifier above its own 1 MiB limit).
    static let maxBytes = 32 << 20

    /// The bytes of FILE, or of stdin for nil / "-". Empty input, a missing file and a terminal on stdin (nothing
    /// piped: the tool would wait forever) are errors.
    static func read(_ path: String?, what: String) throws(ToolFailure) -> [UInt8] {
        let fd: Int32
        let name: String
        if let path, path != "-" {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            name = QuotedText.looksLikeKey(path) ? QuotedText.pemDescription : path
            guard fd >= 0 else { throw .noInput("cannot open \(name): \(String(cString: strerror(errno)))") }
        } else {
            guard isatty(STDIN_FILENO) != 1 else {
                throw .noInput("no \(what) given: name a FILE or pipe it into stdin (-)")
            }
            fd = STDIN_FILENO
            name = "stdin"
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .noInput("cannot read \(name): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= maxBytes else { throw .usage("\(name) is larger than \(maxBytes) bytes") }
        }
        guard !bytes.isEmpty else { throw .noInput("\(name) is empty: expected \(what)") }
        return bytes
    }

    /// Text with surrounding whitespace removed; input that is not UTF-8 is an error.
    static func text(_ bytes: [UInt8], what: String) throws(ToolFailure) -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw ToolFailure(.invalid, status: "INVALID_JWS_FORMAT", reason: "malformed", "\(what) is not UTF-8 text")
        }
        return s.trimmed()
    }

    /// A compact JWS from what was read: the JWS itself, or a JSON body carrying one — a notification or realtime
    /// request body `{"signedPayload": …}`, or any object with exactly one `signed…` string member (an API answer
    /// such as `{"signedTransactionInfo": …}`).
    static func signedPayload(_ bytes: [UInt8]) throws(ToolFailure) -> (jws: String, from: String?) {
        let text = try text(bytes, what: "the input")
        guard text.hasPrefix("{") else { return (text, nil) }
        guard let value = JSONValue.parse(text), let object = value.object else {
            throw ToolFailure(.invalid, status: "INVALID_JWS_FORMAT", reason: "malformed",
                              "the input starts with { but is not a JSON object")
        }
        if let jws = value["signedPayload"]?.stringValue { return (jws, "signedPayload") }
        // Distinct names (a name repeated counts once, its first value winning, as in a dictionary).
        var signed: [(String, String)] = []
        for (key, member) in object where key.hasPrefix("signed") && !signed.contains(where: { $0.0 == key }) {
            if let s = member.stringValue { signed.append((key, s)) }
        }
        guard signed.count == 1, let (key, jws) = signed.first else {
            throw ToolFailure(.invalid, status: "INVALID_JWS_FORMAT", reason: "malformed",
                              "the JSON input has no \"signedPayload\" member (nor exactly one other \"signed…\" string member)"
                              + (signed.isEmpty ? "" : ": found \(signed.map(\.0).sorted().joined(separator: ", "))"))
        }
        return (jws, key)
    }

    /// DER certificates from a file holding DER or PEM (one or more certificates).
    static func certificates(_ path: String) throws(ToolFailure) -> [[UInt8]] {
        let bytes = try read(path, what: "a certificate")
        guard let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN CERTIFICATE-----") else {
            return [bytes]
        }
        var ders: [[UInt8]] = []
        for block in text.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst() {
            guard let end = block.firstRange(of: "-----END CERTIFICATE-----") else {
                throw ToolFailure(.configuration, status: "CONFIGURATION_ERROR", reason: "bad_certificate",
                                  "\(path): a PEM certificate has no END line")
            }
            let b64 = block[..<end.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(b64)) else {
                throw ToolFailure(.configuration, status: "CONFIGURATION_ERROR", reason: "bad_certificate",
                                  "\(path): a PEM certificate is not base64")
            }
            ders.append([UInt8](der))
        }
        return ders
    }
}

/// Where the private key comes from: `--key FILE` or the environment, never the command line itself (arguments
/// are visible to every user of the machine through /proc).
enum KeySource {
    static let environmentVariable = "APPSTORE_PRIVATE_KEY"

    static func load(_ path: String?) throws(ToolFailure) -> SigningKey {
        let pem: [UInt8]
        if let path, QuotedText.looksLikeKey(path) {
            throw .usage("--key takes the path of the .p8 file, but key material was given (not shown): pass the file, "
                         + "or set \(environmentVariable) to its contents")
        }
        if let path {
            guard path != "-" || isatty(STDIN_FILENO) != 1 else { throw .usage("--key -: nothing piped into stdin") }
            pem = try Input.read(path, what: "a PEM private key")
        } else if let value = ProcessInfo.processInfo.environment[environmentVariable], !value.isEmpty {
            pem = Array(value.utf8)
        } else {
            throw .usage("no private key: pass --key FILE (the .p8 file from App Store Connect) or set \(environmentVariable) to its contents")
        }
        do { return try SigningKey(pemBytes: pem) } catch { throw ToolFailure(error) }
    }
}

/// An option that may also come from the environment (key id, issuer id, bundle id are not secret, but typing
/// them on every call is tedious).
func fromEnvironment(_ value: String?, _ variable: String, option: String) throws(ToolFailure) -> String {
    if let value, !value.isEmpty { return value }
    if let env = ProcessInfo.processInfo.environment[variable], !env.isEmpty { return env }
    throw .usage("missing \(option) (or set \(variable))")
}
