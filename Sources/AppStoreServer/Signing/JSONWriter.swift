/// Writes small flat JSON objects in a fixed key order (JWT headers and claims), with RFC 8259 string escaping.
struct JSONObjectWriter {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    private mutating func key(_ k: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        Self.appendString(k, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func add(_ k: String, _ v: String) { key(k); Self.appendString(v, to: &bytes) }
    mutating func add(_ k: String, _ v: Int64) { key(k); bytes += Array(String(v).utf8) }
    mutating func add(_ k: String, _ v: Bool) { key(k); bytes += Array((v ? "true" : "false").utf8) }
    mutating func add(_ k: String, _ v: [String]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, s) in v.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            Self.appendString(s, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    func finish() -> [UInt8] { bytes + [UInt8(ascii: "}")] }

    private static let hex = Array("0123456789abcdef".utf8)

    static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
