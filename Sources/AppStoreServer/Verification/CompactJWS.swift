import FoundationEssentials
import Glibc

/// A compact JWS split into its three segments, the payload and signature decoded; the header is decoded only
/// when the chain cache does not already know its exact bytes.
struct CompactJWS {
    struct Header {
        let alg: String?
        let x5c: [String]?
    }

    /// The header segment as sent (base64url text): the chain cache key.
    let headerSegment: UnsafeRawBufferPointer
    let payload: [UInt8]
    let signature: [UInt8]
    /// Length of "header.payload", the signing input.
    let signingInputLength: Int

    /// Splits on '.', requires exactly three strict base64url segments.
    static func split(_ utf8: UnsafeRawBufferPointer) -> Result<CompactJWS, VerificationFailure> {
        // memchr: a notification is ~12 KB and its nested JWS are split again; a byte loop showed in profiles.
        var dots: [Int] = []
        var from = 0
        while dots.count < 3, from < utf8.count, let base = utf8.baseAddress,
              let hit = memchr(base + from, Int32(UInt8(ascii: ".")), utf8.count - from) {
            let i = base.distance(to: UnsafeRawPointer(hit))
            dots.append(i)
            from = i + 1
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
        guard !h.isEmpty else {
            return .failure(VerificationFailure(.malformed, "JWS header segment is empty"))
        }
        guard !p.isEmpty, let payload = Base64.decode(p, alphabet: .url) else {
            return .failure(VerificationFailure(.malformed, "JWS payload segment is not unpadded base64url"))
        }
        guard let signature = Base64.decode(s, alphabet: .url) else {
            return .failure(VerificationFailure(.malformed, "JWS signature segment is not unpadded base64url"))
        }
        return .success(CompactJWS(headerSegment: h, payload: payload, signature: signature, signingInputLength: dots[1]))
    }

    /// Decodes the header segment: strict base64url, then strict JSON (no duplicate keys: two `alg` or `x5c` members
    /// would let readers disagree), an object whose `alg` is a string and `x5c` an array of strings when present.
    func decodeHeader() -> Result<Header, VerificationFailure> {
        guard let bytes = Base64.decode(headerSegment, alphabet: .url) else {
            return .failure(VerificationFailure(.malformed, "JWS header segment is not unpadded base64url"))
        }
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            return .failure(VerificationFailure(.malformed, "JWS header is not JSON: \(error)"))
        }
        do throws(JSONDecodeError) {
            guard case .object = json else { throw JSONDecodeError.typeMismatch("an object", json) }
            let alg: String? = try JSONFields.optional(json["alg"] ?? .null, strict: false)
            let x5c: [String]? = try JSONFields.optional(json["x5c"] ?? .null, strict: false)
            return .success(Header(alg: alg, x5c: x5c))
        } catch {
            return .failure(VerificationFailure(.malformed, "JWS header is not a JSON object with string alg and x5c array"))
        }
    }
}
