import FoundationEssentials
import Testing
@testable import AppStoreServer

/// The JSON writer's escaping and numbers, written out by hand (RFC 8259 §7), and a round trip through the parser.
@Suite struct JSONWriterTests {
    private func written(_ body: (inout JSONWriter) -> Void) -> String {
        var w = JSONWriter()
        body(&w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    @Test func stringsAreEscapedAsRFC8259Requires() {
        let cases: [(String, String)] = [
            ("", #""""#),
            ("plain", #""plain""#),
            ("a\"b", #""a\"b""#),
            ("\\", #""\\""#),
            ("line\nbreak\r\ttab", #""line\nbreak\r\ttab""#),
            ("\u{01}x\u{1F}", #""\u0001x\u001f""#),
            ("\"\"", #""\"\"""#),                 // escapes back to back, at both ends
            ("\u{7F}/é€😀", "\"\u{7F}/é€😀\""),    // DEL, '/' and non-ASCII pass through as UTF-8
            ("end\n", #""end\n""#),
        ]
        for (input, expected) in cases {
            #expect(written { $0.string(input) } == expected, "\(Array(input.utf8))")
        }
    }

    @Test func integersAreDecimal() {
        let cases: [(Int64, String)] = [
            (0, "0"), (7, "7"), (-1, "-1"), (10, "10"), (1_741_910_400_000, "1741910400000"),
            (Int64.max, "9223372036854775807"), (Int64.min, "-9223372036854775808"),
        ]
        for (v, expected) in cases { #expect(written { $0.int(v) } == expected) }
    }

    @Test func membersAndLiterals() {
        let out = written { w in
            w.beginObject()
            w.member("a", "x")
            w.member("b", Int64(-5))
            w.member("c", true)
            w.key("d"); w.null()
            w.key("e"); w.beginArray(); w.bool(false); w.int(1); w.endArray()
            w.endObject()
        }
        #expect(out == #"{"a":"x","b":-5,"c":true,"d":null,"e":[false,1]}"#)
    }

    @Test func everyStringRoundTripsThroughTheParser() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "\"", "\\", "\n", "\r", "\t", "\u{00}", "\u{1F}", "é", "😀", " ", "/", "\u{7F}"]
        for _ in 0..<500 {
            let s = String((0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            var w = JSONWriter()
            w.beginArray(); w.string(s); w.endArray()
            guard case .array(let items) = try JSONParser.parse(w.bytes), case .string(let back)? = items.first else {
                Issue.record("not an array of one string: \(String(decoding: w.bytes, as: UTF8.self))")
                continue
            }
            #expect(back == s)
        }
    }
}
