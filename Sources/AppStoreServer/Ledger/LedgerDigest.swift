import COpenSSL

/// SHA-256 of an event's payload: its identity in storage (a unique key of fixed size, whatever the payload's).
enum LedgerDigest {
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let ok = bytes.withUnsafeBytes { b in
            digest.withUnsafeMutableBufferPointer { d in EVP_Digest(b.baseAddress, b.count, d.baseAddress, &size, EVP_sha256(), nil) }
        }
        // EVP_Digest with SHA-256 fails only when memory is exhausted, never because of the input.
        precondition(ok == 1, "SHA-256 failed (out of memory)")
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for b in digest { out.append(hex[Int(b >> 4)]); out.append(hex[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
