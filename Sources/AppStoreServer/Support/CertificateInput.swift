/// Root certificates as callers hold them: DER, or PEM text with one or more CERTIFICATE blocks (a downloaded
/// `.pem`, a CA bundle). Every place that takes roots accepts both, in every language, because the core reads them.
enum CertificateInput {
    private static let begin = Array("-----BEGIN CERTIFICATE-----".utf8)
    private static let end = Array("-----END CERTIFICATE-----".utf8)

    /// The DER certificates in `bytes`: `bytes` itself when it is not PEM text, else each CERTIFICATE block
    /// decoded (other blocks, such as a key, are skipped). nil: PEM text whose blocks do not decode, or none.
    static func ders(_ bytes: [UInt8]) -> [[UInt8]]? {
        guard let first = find(begin, in: bytes, from: 0) else { return [bytes] }
        var out: [[UInt8]] = []
        var at = first
        while let start = find(begin, in: bytes, from: at) {
            let body = start + begin.count
            guard let stop = find(end, in: bytes, from: body) else { return nil }
            let text = bytes[body..<stop].filter { $0 != 0x0A && $0 != 0x0D && $0 != 0x20 && $0 != 0x09 }
            guard let der = text.withUnsafeBytes({ Base64.decode($0, alphabet: .standard) }), !der.isEmpty else { return nil }
            out.append(der)
            at = stop + end.count
        }
        return out.isEmpty ? nil : out
    }

    /// The index of `needle` in `haystack` at or after `from` (linear: PEM markers hold no repeated prefix).
    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard needle.count <= haystack.count, from <= haystack.count - needle.count else { return nil }
        var i = from
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
