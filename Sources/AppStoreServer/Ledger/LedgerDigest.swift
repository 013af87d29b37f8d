import COpenSSL

/// SHA-256 of an event's payload: its identity in storage and in the state (a key of fixed size, whatever the
/// payload's: hashing it for a set costs four words, not the payload's thousands of bytes).
enum LedgerDigest {
    /// A SHA-256 digest as four words.
    struct Key: Hashable, Sendable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        static func == (a: Key, b: Key) -> Bool { a.words == b.words }
        func hash(into h: inout Hasher) {
            h.combine(words.0)
            h.combine(words.1)
            h.combine(words.2)
            h.combine(words.3)
        }

        /// Lowercase hex, as the events table stores it.
        var hex: String {
            let digits = Array("0123456789abcdef".utf8)
            var out = [UInt8]()
            out.reserveCapacity(64)
            for w in [words.0, words.1, words.2, words.3] {
                for shift in stride(from: 60, through: 0, by: -4) { out.append(digits[Int((w >> UInt64(shift)) & 15)]) }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    static func key(_ bytes: [UInt8]) -> Key {
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let ok = bytes.withUnsafeBytes { b in
            digest.withUnsafeMutableBufferPointer { d in EVP_Digest(b.baseAddress, b.count, d.baseAddress, &size, ES256.sha256MD, nil) }
        }
        // EVP_Digest with SHA-256 fails only when memory is exhausted, never because of the input.
        precondition(ok == 1, "SHA-256 failed (out of memory)")
        func word(_ i: Int) -> UInt64 { digest[i..<i + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        return Key(words: (word(0), word(8), word(16), word(24)))
    }

    /// The key `hex` (64 lowercase hex digits, as the events table stores it) spells; nil when it is not one.
    static func key(hex: String) -> Key? {
        let u = Array(hex.utf8)
        guard u.count == 64 else { return nil }
        var words: [UInt64] = [0, 0, 0, 0]
        for (i, c) in u.enumerated() {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            words[i / 16] = words[i / 16] << 4 | UInt64(v)
        }
        return Key(words: (words[0], words[1], words[2], words[3]))
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String { key(bytes).hex }
}
