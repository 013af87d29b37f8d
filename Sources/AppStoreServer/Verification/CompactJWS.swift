import FoundationEssentials

/// A compact JWS split and decoded, before any trust decision.
struct CompactJWS {
    struct Header: Decodable {
        let alg: String?
        let x5c: [String]?
    }

    let header: Header
    let payload: [UInt8]
    let signature: [UInt8]
    /// Length of "header.payload", the signing input.
    let signingInputLength: Int

    /// Splits on '.', requires exactly three strict base64url segments and a JSON header.
    static func parse(_ utf8: UnsafeRawBufferPointer) -> Result<CompactJWS, VerificationFailure> {
        var dots: [Int] = []
        for i in 0..<utf8.count where utf8[i] == UInt8(ascii: ".") {
            dots.append(i)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else {
            let n = dots.count + 1
            return .failure(VerificationFailure(.malformed,
                utf8.isEmpty ? "empty input: a compact JWS has three base64url segments"
                    : "compact JWS must have exactly 3 '.'-separated segments, found \(n > 3 ? "more than 3" : String(n))"))
        }
        let h = UnsafeRawBufferPointer(rebasing: utf8[0..<dots[0]])
        let p = UnsafeRawBufferPointer(rebasing: utf8[(dots[0] + 1)..<dots[1]])
        let s = UnsafeRawBufferPointer(rebasing: utf8[(dots[1] + 1)...])
        guard !h.isEmpty, let headerBytes = Base64.decode(h, alphabet: .url) else {
            return .failure(VerificationFailure(.malformed, "JWS header segment is not unpadded base64url"))
        }
        guard !p.isEmpty, let payload = Base64.decode(p, alphabet: .url) else {
            return .failure(VerificationFailure(.malformed, "JWS payload segment is not unpadded base64url"))
        }
        guard let signature = Base64.decode(s, alphabet: .url) else {
            return .failure(VerificationFailure(.malformed, "JWS signature segment is not unpadded base64url"))
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            return .failure(VerificationFailure(.malformed, "JWS header is not a JSON object with string alg and x5c array"))
        }
        return .success(CompactJWS(header: header, payload: payload, signature: signature, signingInputLength: dots[1]))
    }
}
