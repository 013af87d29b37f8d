import AppStoreServer
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `--pretty` / `--compact`; by default pretty on a terminal and compact when piped.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Indent the JSON (the default on a terminal).") var pretty = false
    @Flag(help: "One line of JSON (the default when stdout is not a terminal).") var compact = false

    func validate() throws {
        if pretty && compact { throw ValidationError("--pretty and --compact exclude each other") }
    }

    var wantsPretty: Bool { pretty || (!compact && isatty(STDOUT_FILENO) == 1) }
}

enum Output {
    static func line(_ text: String) {
        write(STDOUT_FILENO, text + "\n")
    }

    static func error(_ text: String) {
        write(STDERR_FILENO, redacted(text) + "\n")
    }

    /// stderr without a newline (a progress line redrawn with "\r").
    static func partial(_ text: String) {
        write(STDERR_FILENO, text)
    }

    /// `text` with every PEM block (and any PEM armour left alone) replaced by a description: key material given
    /// where a path or a value goes must not land in a terminal's scrollback or a CI log.
    static func redacted(_ text: String) -> String {
        guard text.contains("-----BEGIN") || text.contains("PRIVATE KEY") else { return text }
        var out = ""
        var rest = Substring(text)
        while let begin = rest.firstRange(of: "-----BEGIN") {
            out += rest[..<begin.lowerBound] + QuotedText.pemDescription
            rest = rest[begin.upperBound...]
            // The block ends after "-----END <label>-----"; without an END line, everything after BEGIN goes.
            guard let end = rest.firstRange(of: "-----END") else { return out }
            rest = rest[end.upperBound...]
            if let close = rest.firstRange(of: "-----") { rest = rest[close.upperBound...] }
        }
        out += rest
        return out.replacing("PRIVATE KEY", with: "(key)")
    }

    /// JSON text on stdout: as given (compact) or re-indented, byte for byte otherwise (member order and number
    /// spellings are kept exactly as Apple signed them).
    static func json(_ bytes: [UInt8], _ options: OutputOptions) {
        let text = String(decoding: bytes, as: UTF8.self)
        line(options.wantsPretty ? JSONText.indent(text) : text)
    }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
            offset += n
        }
    }
}

/// JSON text helpers that never re-parse into dictionaries (which would lose member order).
enum JSONText {
    /// A JSON string literal.
    static func string(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// An object from members whose values are JSON text already.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { "\(string($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    /// Re-indents valid JSON text by two spaces per level; strings are copied untouched.
    static func indent(_ json: String) -> String {
        var out = ""
        var depth = 0
        var inString = false
        var escaped = false
        var pendingOpen = false
        func newline() { out += "\n" + String(repeating: "  ", count: depth) }
        for c in json {
            if inString {
                out.append(c)
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false }
                continue
            }
            if c == " " || c == "\n" || c == "\t" || c == "\r" { continue }
            if pendingOpen {
                pendingOpen = false
                if c == "}" || c == "]" { depth -= 1; out.append(c); continue }
                newline()
            }
            switch c {
            case "{", "[":
                out.append(c); depth += 1; pendingOpen = true
            case "}", "]":
                depth -= 1; newline(); out.append(c)
            case ",":
                out.append(c); newline()
            case ":":
                out += ": "
            case "\"":
                inString = true; out.append(c)
            default:
                out.append(c)
            }
        }
        return out
    }
}
