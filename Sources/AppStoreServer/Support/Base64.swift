// Strict base64 / base64url codecs. JWS segments must be unpadded base64url (RFC 7515 §2) and x5c entries
// padded standard base64 (RFC 7515 §4.1.6); anything else is malformed input, never silently "fixed".

enum Base64 {
    enum Alphabet: Sendable { case standard, url }

    private static func table(_ alphabet: Alphabet) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        let chars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            + (alphabet == .standard ? Array("+/".utf8) : Array("-_".utf8))
        for (i, c) in chars.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }
    private static let standardTable = table(.standard)
    private static let urlTable = table(.url)

    /// Decodes `input`. `.url` accepts only unpadded input; `.standard` requires canonical `=` padding.
    /// Non-zero trailing bits are rejected so every byte string has exactly one accepted encoding.
    static func decode(_ input: UnsafeRawBufferPointer, alphabet: Alphabet) -> [UInt8]? {
        let t = alphabet == .standard ? standardTable : urlTable
        var n = input.count
        if alphabet == .standard {
            guard n % 4 == 0 else { return nil }
            if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
            if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
        }
        let rem = n % 4
        if rem == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(n / 4 * 3 + 2)
        var i = 0
        let full = n - rem
        while i < full {
            let a = t[Int(input[i])], b = t[Int(input[i + 1])], c = t[Int(input[i + 2])], d = t[Int(input[i + 3])]
            if (a | b | c | d) & 0xC0 != 0 { return nil }
            out.append(a << 2 | b >> 4)
            out.append((b & 0x0F) << 4 | c >> 2)
            out.append((c & 0x03) << 6 | d)
            i += 4
        }
        if rem == 2 {
            let a = t[Int(input[i])], b = t[Int(input[i + 1])]
            if (a | b) & 0xC0 != 0 || b & 0x0F != 0 { return nil }
            out.append(a << 2 | b >> 4)
        } else if rem == 3 {
            let a = t[Int(input[i])], b = t[Int(input[i + 1])], c = t[Int(input[i + 2])]
            if (a | b | c) & 0xC0 != 0 || c & 0x03 != 0 { return nil }
            out.append(a << 2 | b >> 4)
            out.append((b & 0x0F) << 4 | c >> 2)
        }
        return out
    }

    static func decode(_ string: String, alphabet: Alphabet) -> [UInt8]? {
        var s = string
        return s.withUTF8 { decode(UnsafeRawBufferPointer($0), alphabet: alphabet) }
    }

    static func encode<C: Collection>(_ bytes: C, alphabet: Alphabet) -> String where C.Element == UInt8 {
        let chars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            + (alphabet == .standard ? Array("+/".utf8) : Array("-_".utf8))
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= input.count {
            let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(chars[Int(v >> 18 & 63)]); out.append(chars[Int(v >> 12 & 63)])
            out.append(chars[Int(v >> 6 & 63)]); out.append(chars[Int(v & 63)])
            i += 3
        }
        let rem = input.count - i
        if rem > 0 {
            var v = UInt32(input[i]) << 16
            if rem == 2 { v |= UInt32(input[i + 1]) << 8 }
            out.append(chars[Int(v >> 18 & 63)]); out.append(chars[Int(v >> 12 & 63)])
            if rem == 2 { out.append(chars[Int(v >> 6 & 63)]) }
            if alphabet == .standard { out.append(contentsOf: Array(repeating: UInt8(ascii: "="), count: 3 - rem)) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
