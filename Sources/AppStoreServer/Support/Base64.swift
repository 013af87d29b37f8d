// Strict base64 / base64url codecs. JWS segments must be unpadded base64url (RFC 7515 §2) and x5c entries
// padded standard base64 (RFC 7515 §4.1.6); anything else is malformed input, never silently "fixed".

enum Base64 {
    enum Alphabet: Sendable { case standard, url }

    private static func table(_ alphabet: Alphabet) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in (alphabet == .standard ? standardChars : urlChars).enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }
    private static let standardTable = table(.standard)
    private static let urlTable = table(.url)

    /// Decodes `input`. `.url` accepts only unpadded input; `.standard` requires canonical `=` padding.
    /// Non-zero trailing bits are rejected so every byte string has exactly one accepted encoding.
    static func decode(_ input: UnsafeRawBufferPointer, alphabet: Alphabet) -> [UInt8]? {
        var n = input.count
        if alphabet == .standard {
            guard n % 4 == 0 else { return nil }
            if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
            if n > 0 && input[n - 1] == UInt8(ascii: "=") { n -= 1 }
        }
        let rem = n % 4
        if rem == 1 { return nil }
        let size = n / 4 * 3 + (rem == 0 ? 0 : rem - 1)
        var valid = true
        // Written into the array's storage directly: JWS payloads and x5c chains are kilobytes, decoded per call.
        let out = (alphabet == .standard ? standardTable : urlTable).withUnsafeBufferPointer { t in
            [UInt8](unsafeUninitializedCapacity: size) { out, written in
                var i = 0, o = 0
                let full = n - rem
                while i < full {
                    let a = t[Int(input[i])], b = t[Int(input[i + 1])], c = t[Int(input[i + 2])], d = t[Int(input[i + 3])]
                    if (a | b | c | d) & 0xC0 != 0 { valid = false; break }
                    out[o] = a << 2 | b >> 4
                    out[o + 1] = (b & 0x0F) << 4 | c >> 2
                    out[o + 2] = (c & 0x03) << 6 | d
                    i += 4
                    o += 3
                }
                if valid && rem == 2 {
                    let a = t[Int(input[i])], b = t[Int(input[i + 1])]
                    if (a | b) & 0xC0 != 0 || b & 0x0F != 0 { valid = false } else { out[o] = a << 2 | b >> 4; o += 1 }
                } else if valid && rem == 3 {
                    let a = t[Int(input[i])], b = t[Int(input[i + 1])], c = t[Int(input[i + 2])]
                    if (a | b | c) & 0xC0 != 0 || c & 0x03 != 0 {
                        valid = false
                    } else {
                        out[o] = a << 2 | b >> 4
                        out[o + 1] = (b & 0x0F) << 4 | c >> 2
                        o += 2
                    }
                }
                // UInt8 is trivial: the bytes written so far are initialized, whatever the outcome.
                written = o
            }
        }
        return valid ? out : nil
    }

    static func decode(_ string: String, alphabet: Alphabet) -> [UInt8]? {
        var s = string
        return s.withUTF8 { decode(UnsafeRawBufferPointer($0), alphabet: alphabet) }
    }

    private static let standardChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode<C: Collection>(_ bytes: C, alphabet: Alphabet) -> String where C.Element == UInt8 {
        if let s = bytes.withContiguousStorageIfAvailable({ encode($0, alphabet: alphabet) }) { return s }
        return Array(bytes).withUnsafeBufferPointer { encode($0, alphabet: alphabet) }
    }

    private static func encode(_ input: UnsafeBufferPointer<UInt8>, alphabet: Alphabet) -> String {
        let size = encodedCount(input.count, alphabet: alphabet)
        guard size > 0 else { return "" }
        return String(unsafeUninitializedCapacity: size) { encode(input, into: $0, alphabet: alphabet) }
    }

    /// `bytes` encoded, appended to `out` (a stored JWS is rebuilt into one buffer: `StoredSigned.expand`).
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, appendingTo out: inout [UInt8], alphabet: Alphabet) {
        let size = encodedCount(bytes.count, alphabet: alphabet)
        guard size > 0 else { return }
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: size))
        out.withUnsafeMutableBufferPointer { all in
            _ = encode(bytes, into: UnsafeMutableBufferPointer(rebasing: all[start...]), alphabet: alphabet)
        }
    }

    private static func encodedCount(_ n: Int, alphabet: Alphabet) -> Int {
        let rem = n % 3
        return n / 3 * 4 + (rem == 0 ? 0 : alphabet == .standard ? 4 : rem + 1)
    }

    /// Writes the encoding of `input` to `out` (at least `encodedCount` bytes); returns the count written.
    private static func encode(_ input: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>,
                               alphabet: Alphabet) -> Int {
        let rem = input.count % 3
        let size = encodedCount(input.count, alphabet: alphabet)
        return (alphabet == .standard ? standardChars : urlChars).withUnsafeBufferPointer { chars in
            var i = 0, o = 0
            while i + 3 <= input.count {
                let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                out[o] = chars[Int(v >> 18 & 63)]
                out[o + 1] = chars[Int(v >> 12 & 63)]
                out[o + 2] = chars[Int(v >> 6 & 63)]
                out[o + 3] = chars[Int(v & 63)]
                i += 3
                o += 4
            }
            if rem > 0 {
                var v = UInt32(input[i]) << 16
                if rem == 2 { v |= UInt32(input[i + 1]) << 8 }
                out[o] = chars[Int(v >> 18 & 63)]
                out[o + 1] = chars[Int(v >> 12 & 63)]
                o += 2
                if rem == 2 { out[o] = chars[Int(v >> 6 & 63)]; o += 1 }
                if alphabet == .standard { while o < size { out[o] = UInt8(ascii: "="); o += 1 } }
            }
            return o
        }
    }
}
