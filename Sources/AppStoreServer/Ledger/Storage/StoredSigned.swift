#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// How `events.signed` holds a JWS (docs/ledger.md, "Storage layout"): each distinct JWS header (`alg` and the x5c
/// certificate chain, ~3.7 KB of base64url that millions of values share) is stored once in the `jws_headers` table,
/// keyed by its digest, and the event's text refers to it. Every stored value reconstructs to the received JWS
/// byte for byte (it is re-verified by `Ledger.reverify` and exported as received).
///
/// A stored text is either a JWS as received (written before this layout, or a value the layout cannot hold exactly;
/// behind `~0.` when it starts with `~` itself) or, starting with `~` (never a base64url character), the form
///
///     ~1.<header digest>.<signature segment>.<nested references>.<payload>
///
/// - header digest: base64url SHA-256 of the header segment's text (43 characters), a key of `jws_headers`;
/// - nested references, separated by `,` (may be empty): a nested JWS (the notification's signedTransactionInfo and
///   signedRenewalInfo carry their own chains) whose header was taken out of the payload, to be put back at a byte
///   offset of the stored payload text (offsets strictly ascending): `offset:digest` (the header goes in at offset),
///   or `offset:digest:length` (the nested payload is stored decoded too: offset holds its `.`, then its `length`
///   bytes of JSON, then the `.` of its signature; it is encoded again behind the header). An empty digest is the
///   outer header's (Apple signs the outer and nested values with one chain);
/// - payload: `j` and the payload's JSON text (decoded: a quarter smaller than its base64url); `k` and the same text
///   with each `"name":` of Apple's member names (`MemberNames`) written as the byte 0x01 and the name's code (a text
///   with no 0x01 of its own); or `b` and the payload segment as received, when decoding and encoding again would not give back the same bytes, or the JSON is not
///   text a database column can hold (invalid UTF-8, a NUL).
///
/// Writing checks that the form expands back to the received bytes and keeps the received text when it would not.
enum StoredSigned {
    /// A JWS header segment, stored once: `digest` is the base64url SHA-256 of `text`.
    struct Header: Hashable, Sendable {
        let digest: String
        let text: String
    }

    /// Headers shorter than this are left in place (a reference costs ~50 bytes).
    static let minimumHeader = 128

    static func digest(_ text: String) -> String {
        let k = LedgerDigest.key(Array(text.utf8))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for w in [k.words.0, k.words.1, k.words.2, k.words.3] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: w >> UInt64(shift))) }
        }
        return Base64.encode(bytes, alphabet: .url)
    }

    /// The text to store for `jws`, and the headers it refers to (each to be stored in `jws_headers` if absent).
    static func compact(_ jws: String) -> (text: String, headers: [Header]) {
        // A text starting with `~` (never a JWS the verifier accepts) is kept as received behind `~0.`.
        let asReceived = jws.utf8.first == UInt8(ascii: "~") ? "~0." + jws : jws
        let received = Array(jws.utf8)
        guard let form = makeCompact(received) else { return (asReceived, []) }
        // Never lose a byte: the form must give back exactly what was received. (Compared as bytes, on the bytes
        // `expand` rebuilds: no string made for the check, which every ingest pays for.)
        let known = Dictionary(form.headers.map { ($0.digest, $0.text) }, uniquingKeysWith: { a, _ in a })
        guard let back = try? expandForm(form.text, eventId: 0, header: { known[$0] }), back.count == received.count,
              back.withUnsafeBytes({ b in received.withUnsafeBytes { b.isEmpty || memcmp(b.baseAddress!, $0.baseAddress!, b.count) == 0 } }) else {
            return (asReceived, [])
        }
        return (String(decoding: form.text, as: UTF8.self), form.headers)
    }

    private static func makeCompact(_ u: [UInt8]) -> (text: [UInt8], headers: [Header])? {
        guard u.first != UInt8(ascii: "~") else { return nil }
        // Exactly three segments (found with memchr: a JWS is ~16 KB, scanned on every ingest).
        guard let dots = u.withUnsafeBufferPointer({ b -> (Int, Int)? in
            let first = index(of: UInt8(ascii: "."), in: b, from: 0)
            let second = index(of: UInt8(ascii: "."), in: b, from: first + 1)
            guard second < b.count, index(of: UInt8(ascii: "."), in: b, from: second + 1) == b.count else { return nil }
            return (first, second)
        }) else { return nil }
        let parts = [u[..<dots.0], u[(dots.0 + 1)..<dots.1], u[(dots.1 + 1)...]]
        guard parts[0].count >= minimumHeader, !parts[2].contains(UInt8(ascii: ",")) else { return nil }
        let outer = parts[0].withUnsafeBufferPointer { Header(bytes: $0) }
        var headers = [outer]
        let payloadSegment = parts[1]
        var payloadForm: [UInt8] = []
        var refs: [UInt8] = []
        // The decoder takes canonical base64url only (no padding, no stray bits), so a decoded segment encodes
        // back to itself: `expand` gives back the received bytes (and `compact` checks the whole form once more).
        if let json = payloadSegment.withUnsafeBytes({ Base64.decode($0, alphabet: .url) }), isColumnText(json[...]) {
            var reduced: [UInt8] = []
            reduced.reserveCapacity(json.count)
            // Apple signs the nested values with the outer value's chain: a nested header that is the outer one is
            // recognised by one comparison (the outer text checked as a base64url run once) instead of a scan.
            let outerText = parts[0]
            let outerIsRun = outerText.withUnsafeBufferPointer { base64URLRunEnd($0, from: 0) == $0.count }
            json.withUnsafeBufferPointer { json in
                var i = 0
                // A nested compact JWS is a JSON string `"<header>.<payload>.<signature>"`: its header is a run of
                // base64url characters after a quote, ending at a dot; its payload the run after that dot.
                while i < json.count {
                    let isOuter = json[i] == UInt8(ascii: "\"") && outerIsRun && i + 1 + outerText.count < json.count
                        && json[i + 1 + outerText.count] == UInt8(ascii: ".")
                        && outerText.withUnsafeBufferPointer { memcmp(json.baseAddress! + i + 1, $0.baseAddress!, $0.count) == 0 }
                    let headerEnd = isOuter ? i + 1 + outerText.count
                        : json[i] == UInt8(ascii: "\"") ? nestedHeaderEnd(json, from: i + 1) : nil
                    if let end = headerEnd {
                        reduced.append(json[i])
                        let h = isOuter ? outer : Header(bytes: UnsafeBufferPointer(rebasing: json[(i + 1)..<end]))
                        if !refs.isEmpty { refs.append(UInt8(ascii: ",")) }
                        refs.append(contentsOf: String(reduced.count).utf8)
                        refs.append(UInt8(ascii: ":"))
                        // Empty: the outer header's.
                        if h.digest != outer.digest {
                            headers.append(h)
                            refs.append(contentsOf: h.digest.utf8)
                        }
                        // The nested payload decoded too, when that gives back its bytes and is text.
                        let payload = end + 1
                        let stop = base64URLRunEnd(json, from: payload)
                        if stop < json.count, json[stop] == UInt8(ascii: "."), stop > payload,
                           let decoded = Base64.decode(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: json[payload..<stop])), alphabet: .url),
                           isColumnText(decoded[...]) {
                            refs.append(UInt8(ascii: ":"))
                            refs.append(contentsOf: String(decoded.count).utf8)
                            reduced.append(UInt8(ascii: "."))
                            reduced.append(contentsOf: decoded)
                            i = stop
                        } else {
                            i = end
                        }
                        continue
                    }
                    // Up to the next quote in one copy (the text between JSON strings' starts).
                    let next = index(of: UInt8(ascii: "\""), in: json, from: i + 1)
                    reduced.append(contentsOf: UnsafeBufferPointer(rebasing: json[i..<next]))
                    i = next
                }
            }
            // Apple's member names (a third of a payload) as two bytes each, when the text has no 0x01 of its own.
            if reduced.contains(0x01) {
                payloadForm.reserveCapacity(reduced.count + 1)
                payloadForm.append(UInt8(ascii: "j"))
                payloadForm.append(contentsOf: reduced)
            } else {
                payloadForm = MemberNames.shorten(reduced, prefix: UInt8(ascii: "k"))
            }
        } else {
            payloadForm.reserveCapacity(payloadSegment.count + 1)
            payloadForm.append(UInt8(ascii: "b"))
            payloadForm.append(contentsOf: payloadSegment)
        }
        // ~1.<header digest>.<signature segment>.<nested references>.<payload form>
        var text: [UInt8] = []
        text.reserveCapacity(3 + 44 + parts[2].count + 1 + refs.count + 1 + payloadForm.count)
        text.append(contentsOf: "~1.".utf8)
        text.append(contentsOf: outer.digest.utf8)
        text.append(UInt8(ascii: "."))
        text.append(contentsOf: parts[2])
        text.append(UInt8(ascii: "."))
        text.append(contentsOf: refs)
        text.append(UInt8(ascii: "."))
        text.append(contentsOf: payloadForm)
        return (text, headers)
    }

    /// Whether `b` is text a database column holds as it is: valid UTF-8 without a NUL. Apple's payloads are ASCII:
    /// checked eight bytes at a time, the rest validated by the standard library.
    static func isColumnText(_ b: ArraySlice<UInt8>) -> Bool {
        b.withUnsafeBytes { raw in
            var i = 0
            var high: UInt64 = 0
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while i + 8 <= raw.count {
                let v = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                // A zero byte: (v - 0x01..) & ~v & 0x80.. is not 0 (the classic test; exact for "any byte is zero").
                if (v &- ones) & ~v & highs != 0 { return false }
                high |= v & highs
                i += 8
            }
            while i < raw.count {
                if raw[i] == 0 { return false }
                high |= UInt64(raw[i] & 0x80)
                i += 1
            }
            return high == 0 || String(validating: UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count), as: UTF8.self) != nil
        }
    }

    /// The end of a base64url run from `start`, when it is at least `minimumHeader` long and a dot follows.
    private static func nestedHeaderEnd(_ b: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        let j = base64URLRunEnd(b, from: start)
        guard j - start >= minimumHeader, j < b.count, b[j] == UInt8(ascii: ".") else { return nil }
        return j
    }

    /// The first index at or after `start` that is not a base64url character (or `b.count`).
    private static func base64URLRunEnd(_ b: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        base64URLBytes.withUnsafeBufferPointer { table in
            var j = start
            while j < b.count, table[Int(b[j])] { j += 1 }
            return j
        }
    }

    /// The first index of `byte` at or after `start` (or `b.count`).
    static func index(of byte: UInt8, in b: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard start < b.count, let base = b.baseAddress,
              let hit = memchr(base + start, Int32(byte), b.count - start) else { return b.count }
        return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }

    private static let base64URLBytes: [Bool] = (0..<256).map { c in
        (65...90).contains(c) || (97...122).contains(c) || (48...57).contains(c) || c == 45 || c == 95
    }

    /// The offsets of the four dots that end `~1.<digest>.<signature>.<refs>.` in a stored text (the first is 2), when
    /// it starts so and a payload form follows; nil otherwise. Both readers (`expand`, `payloads`) split with it.
    private static func formDots(_ u: [UInt8]) -> [Int]? {
        guard u.count > 3, u[0] == UInt8(ascii: "~"), u[1] == UInt8(ascii: "1"), u[2] == UInt8(ascii: ".") else { return nil }
        var dots = [2]
        u.withUnsafeBufferPointer { b in
            while dots.count < 4, case let next = index(of: UInt8(ascii: "."), in: b, from: dots[dots.count - 1] + 1),
                  next < b.count {
                dots.append(next)
            }
        }
        guard dots.count == 4, dots[3] + 1 < u.count else { return nil }
        return dots
    }

    /// A nested reference of the stored form: `offset:digest` or `offset:digest:length` (see the type's comment).
    struct Reference {
        let at: Int
        let digest: String
        let length: Int?
    }

    /// A reference that does not fit its payload (its text, for the message naming the row).
    struct BadReference: Error {
        let text: String
    }

    /// The references `text` lists, each in place in `payload`: offsets ascending and inside it, a decoded payload's
    /// length not negative and its two dots where they belong. Both readers (`expand`, `payloads`) take them from
    /// here, so a corrupt row is refused the same way, never indexed out of bounds.
    static func references(_ text: some Collection<UInt8>, in payload: [UInt8]) -> Result<[Reference], BadReference> {
        var refs: [Reference] = []
        for ref in text.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let f = ref.split(separator: UInt8(ascii: ":"), maxSplits: 2, omittingEmptySubsequences: false)
            let number = { (i: Int) in Int(String(decoding: f[i], as: UTF8.self)) }
            let length = f.count == 3 ? number(2) : nil
            guard f.count == 2 || (f.count == 3 && length != nil), let at = number(0), at >= 0,
                  at > (refs.last?.at ?? -1), at <= payload.count,
                  length.map({ $0 >= 0 && at + 1 + $0 < payload.count && payload[at] == UInt8(ascii: ".")
                      && payload[at + 1 + $0] == UInt8(ascii: ".") }) ?? true else {
                return .failure(BadReference(text: String(decoding: ref, as: UTF8.self)))
            }
            refs.append(Reference(at: at, digest: String(decoding: f[1], as: UTF8.self), length: length))
        }
        return .success(refs)
    }

    /// The signature segment of a stored text, without expanding it.
    static func signature(ofStored stored: String) -> Substring {
        if stored.hasPrefix("~1.") {
            let parts = stored.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
            return parts.count == 4 ? parts[2] : ""
        }
        return stored.split(separator: ".", omittingEmptySubsequences: false).last ?? ""
    }

    /// The JWS that `stored` (an `events.signed` text) holds; `header` finds a header's text by digest (nil: not
    /// stored). A reference to a missing header, or a form that does not parse, is a storage error naming the row.
    static func expand(_ stored: String, eventId: Int64, header: (String) throws(LedgerError) -> String?) throws(LedgerError) -> String {
        guard stored.utf8.first == UInt8(ascii: "~") else { return stored }
        if stored.hasPrefix("~0.") { return String(stored.dropFirst(3)) }
        return String(decoding: try expandForm(Array(stored.utf8), eventId: eventId, header: header), as: UTF8.self)
    }

    /// The received bytes of the `~1.` form `u` (`expand`), rebuilt into one buffer.
    private static func expandForm(_ u: [UInt8], eventId: Int64,
                                   header: (String) throws(LedgerError) -> String?) throws(LedgerError) -> [UInt8] {
        func corrupt(_ why: String) -> LedgerError {
            .storage("event \(eventId): its stored JWS is corrupt: \(why) (`appstoreserver ledger check` lists such rows)")
        }
        func find(_ digest: String) throws(LedgerError) -> String {
            guard let t = try header(digest) else {
                throw corrupt("its certificate chain \(QuotedText.quote(digest)) is missing from jws_headers")
            }
            return t
        }
        guard let dots = formDots(u) else { throw corrupt("not a stored form this library knows") }
        let signature = u[(dots[1] + 1)..<dots[2]]
        let refsText = u[(dots[2] + 1)..<dots[3]]
        let kind = u[dots[3] + 1]
        let outer = try find(String(decoding: u[(dots[0] + 1)..<dots[1]], as: UTF8.self))
        var payload = Array(u[(dots[3] + 2)...])
        var form = kind
        if kind == UInt8(ascii: "k") {
            guard let full = MemberNames.expand(payload) else { throw corrupt("an unknown member name code") }
            payload = full
            form = UInt8(ascii: "j")
        }
        var out: [UInt8] = []
        out.append(contentsOf: outer.utf8)
        out.append(UInt8(ascii: "."))
        switch form {
        case UInt8(ascii: "b"):
            guard refsText.isEmpty else { throw corrupt("nested references in a base64url payload") }
            out.reserveCapacity(out.count + payload.count + 1 + signature.count)
            out.append(contentsOf: payload)
        case UInt8(ascii: "j"):
            var full = payload
            if !refsText.isEmpty {
                let refs: [Reference]
                switch references(refsText, in: payload) {
                case .success(let r): refs = r
                case .failure(let bad): throw corrupt("a nested reference \(QuotedText.quote(bad.text)) is out of place")
                }
                // Each header put back at its offset of the stored text; a nested payload stored decoded is encoded
                // again behind it (the dot at its offset, then its bytes, replaced by the header, a dot, the base64url).
                full = []
                full.reserveCapacity(payload.count + refs.count * 4096)
                var from = 0
                for r in refs {
                    guard r.at >= from else {
                        // Overlapping another's nested payload: never written so (`makeCompact`).
                        let text = "\(r.at):\(r.digest)" + (r.length.map { ":\($0)" } ?? "")
                        throw corrupt("a nested reference \(QuotedText.quote(text)) is out of place")
                    }
                    full.append(contentsOf: payload[from..<r.at])
                    full.append(contentsOf: (r.digest.isEmpty ? outer : try find(r.digest)).utf8)
                    if let n = r.length {
                        full.append(UInt8(ascii: "."))
                        payload.withUnsafeBufferPointer {
                            Base64.encode(UnsafeBufferPointer(rebasing: $0[(r.at + 1)..<(r.at + 1 + n)]), appendingTo: &full, alphabet: .url)
                        }
                        from = r.at + 1 + n
                    } else {
                        from = r.at
                    }
                }
                full.append(contentsOf: payload[from...])
            }
            out.reserveCapacity(out.count + (full.count + 2) / 3 * 4 + 1 + signature.count)
            full.withUnsafeBufferPointer { Base64.encode($0, appendingTo: &out, alphabet: .url) }
        default:
            throw corrupt("unknown payload form")
        }
        out.append(UInt8(ascii: "."))
        out.append(contentsOf: signature)
        return out
    }
}

extension StoredSigned {
    /// The payload JSON a stored text holds, read without rebuilding its JWS (a query decodes each of its key's
    /// events: no base64 either way, no certificate chain; docs/ledger.md, "Scale"). `outer` is the payload as signed,
    /// except that each nested JWS stands as the JSON string `placeholder(i)`; `nested[i]` is that JWS's payload as
    /// signed. Nil when the text is not the `~1.` form with a JSON payload whose nested payloads are all stored decoded,
    /// or when a placeholder would not be unique: the caller expands the text and decodes the JWS instead.
    static func payloads(ofStored stored: String) -> (outer: [UInt8], nested: [[UInt8]], headers: [String])? {
        let u = Array(stored.utf8)
        guard let dots = formDots(u) else { return nil }
        let form = u[dots[3] + 1]
        var payload = Array(u[(dots[3] + 2)...])
        switch form {
        case UInt8(ascii: "k"):
            guard let full = MemberNames.expand(payload) else { return nil }
            payload = full
        case UInt8(ascii: "j"): break
        default: return nil
        }
        // The certificate chains it refers to: not needed to read the payloads, but a row whose chain is gone is
        // corrupt (it cannot be verified again or exported), and a query says so as it would after expanding it.
        var headers = [String(decoding: u[(dots[0] + 1)..<dots[1]], as: UTF8.self)]
        let refsText = u[(dots[2] + 1)..<dots[3]]
        guard !refsText.isEmpty else { return (payload, [], headers) }
        // Every nested payload stored decoded, each behind the quote that opens its string.
        guard case .success(let all) = references(refsText, in: payload) else { return nil }
        var refs: [(at: Int, length: Int)] = []
        for r in all {
            guard let n = r.length, r.at >= 1, payload[r.at - 1] == UInt8(ascii: "\"") else { return nil }
            refs.append((r.at, n))
            if !r.digest.isEmpty { headers.append(r.digest) }
        }
        var nested: [[UInt8]] = []
        var outer: [UInt8] = []
        outer.reserveCapacity(payload.count)
        var from = 0
        for (k, r) in refs.enumerated() {
            // The nested value's signature runs from after its payload's closing dot to the string's closing quote.
            let end = payload.withUnsafeBufferPointer { base64URLRunEnd($0, from: r.at + 2 + r.length) }
            guard end < payload.count, payload[end] == UInt8(ascii: "\""), r.at > from else { return nil }
            nested.append(Array(payload[(r.at + 1)..<(r.at + 1 + r.length)]))
            outer.append(contentsOf: payload[from..<(r.at - 1)])
            outer.append(contentsOf: placeholder(k))
            from = end + 1
        }
        outer.append(contentsOf: payload[from...])
        // A placeholder must stand for its nested value only: the signed JSON could hold the same string.
        for k in nested.indices {
            let p = placeholder(k)
            guard let first = NotificationFacts.find(p, in: outer),
                  NotificationFacts.find(p, in: Array(outer[(first + 1)...])) == nil else { return nil }
        }
        return (outer, nested, headers)
    }

    /// The JSON string standing for nested value `k` in `payloads(ofStored:)`'s outer payload.
    static func placeholder(_ k: Int) -> [UInt8] { Array("\"~\(k)~\"".utf8) }

    /// The index of the nested value `value` stands for, when it is a placeholder.
    static func placeholderIndex(_ value: String?) -> Int? {
        guard let v = value, v.utf8.count >= 3, v.hasPrefix("~"), v.hasSuffix("~") else { return nil }
        return Int(v.dropFirst().dropLast())
    }
}

extension StoredSigned.Header {
    /// The header whose text is `bytes` (UTF-8).
    init(bytes: UnsafeBufferPointer<UInt8>) {
        // Millions of values share a few chains: the last header is reused when its bytes are the same (one
        // comparison, not a string, a SHA-256 and a base64 per JWS).
        if let hit = Self.last.withLock({ last -> Self? in
            guard let last, last.bytes.count == bytes.count,
                  bytes.count > 0, last.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) else { return nil }
            return last.header
        }) {
            self = hit
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        self.init(digest: StoredSigned.digest(text), text: text)
        let made = (header: self, bytes: Array(bytes))
        Self.last.withLock { $0 = made }
    }

    private static let last = Locked<(header: StoredSigned.Header, bytes: [UInt8])?>(nil)
}

/// The headers a store has read, by digest (content-addressed: an entry is right whatever happens to transactions,
/// and is checked against its digest when read from the database).
final class StoredHeaderCache: Sendable {
    private let headers = Locked<[String: String]>([:])

    /// The text of `digest`: cached, or `load`ed (the stored text, or nil) and checked.
    func text(_ digest: String, eventId: Int64, load: (String) throws(LedgerError) -> String?) throws(LedgerError) -> String? {
        if let t = headers.withLock({ $0[digest] }) { return t }
        guard let t = try load(digest) else { return nil }
        guard StoredSigned.digest(t) == digest else {
            throw .storage("event \(eventId): its stored JWS is corrupt: the certificate chain stored under "
                + "\(QuotedText.quote(digest)) does not match its digest (`appstoreserver ledger check` lists such rows)")
        }
        headers.withLock { $0[digest] = t }
        return t
    }
}

/// Apple's payload member names, each `"name":` stored as 0x01 and a code byte (0x20 + its index): a third of a
/// payload's JSON is these names. Append only: stored texts depend on every code (96 codes at most).
enum MemberNames {
    static let names: [String] = [
        "notificationType", "subtype", "notificationUUID", "data", "version", "signedDate", "summary",
        "externalPurchaseToken", "appData", "environment", "appAppleId", "bundleId", "productId", "requestIdentifier",
        "storefrontCountryCodes", "succeededCount", "failedCount", "externalPurchaseId", "tokenCreationDate", "tokenType",
        "tokenExpirationDate", "signedAppTransactionInfo", "originalTransactionId", "transactionId", "webOrderLineItemId",
        "subscriptionGroupIdentifier", "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity", "type",
        "appAccountToken", "inAppOwnershipType", "revocationReason", "revocationDate", "isUpgraded", "offerType",
        "offerIdentifier", "storefront", "storefrontId", "transactionReason", "currency", "price", "offerDiscountType",
        "appTransactionId", "offerPeriod", "revocationType", "revocationPercentage", "advancedCommerceInfo",
        "billingPlanType", "commitmentInfo", "expirationIntent", "autoRenewProductId", "autoRenewStatus",
        "isInBillingRetryPeriod", "priceIncreaseStatus", "gracePeriodExpiresDate", "recentSubscriptionStartDate",
        "renewalDate", "renewalPrice", "eligibleWinBackOfferIds", "renewalBillingPlanType", "bundleVersion",
        "signedTransactionInfo", "signedRenewalInfo", "status", "consumptionRequestReason",
    ]
    private static let expanded: [[UInt8]] = names.map { Array("\"\($0)\":".utf8) }

    /// The names by length, each with its code: a member name is looked up among the few of its length, compared
    /// byte for byte (no key array made and hashed per member).
    private static let byLength: [[([UInt8], UInt8)]] = {
        var out = [[([UInt8], UInt8)]](repeating: [], count: 41)
        for (i, n) in names.enumerated() where n.utf8.count < out.count { out[n.utf8.count].append((Array(n.utf8), UInt8(0x20 + i))) }
        return out
    }()

    /// `text` (without a 0x01 byte) with every `"name":` of a known name shortened.
    /// `prefix`, when given, is the first byte of the result (the stored form's kind: no second copy to add it).
    static func shorten(_ text: [UInt8], prefix: UInt8? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 1)
        if let prefix { out.append(prefix) }
        var i = 0
        while i < text.count {
            if text[i] == UInt8(ascii: "\""), let close = text[(i + 1)...].prefix(40).firstIndex(of: UInt8(ascii: "\"")),
               close + 1 < text.count, text[close + 1] == UInt8(ascii: ":"),
               let code = byLength[close - i - 1].first(where: { $0.0.elementsEqual(text[(i + 1)..<close]) })?.1 {
                out.append(0x01)
                out.append(code)
                i = close + 2
                continue
            }
            // Up to the next quote in one copy.
            let next = text.withUnsafeBufferPointer { StoredSigned.index(of: UInt8(ascii: "\""), in: $0, from: i + 1) }
            out.append(contentsOf: text[i..<next])
            i = next
        }
        return out
    }

    /// The text `shorten` was given; nil when a code is unknown.
    static func expand(_ text: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 2)
        var i = 0
        while i < text.count {
            // The text up to the next code in one copy (a query expands every event of its key).
            let next = text.withUnsafeBufferPointer { StoredSigned.index(of: 0x01, in: $0, from: i) }
            out.append(contentsOf: text[i..<next])
            i = next
            guard i < text.count else { break }
            guard i + 1 < text.count, text[i + 1] >= 0x20, Int(text[i + 1] - 0x20) < expanded.count else { return nil }
            out.append(contentsOf: expanded[Int(text[i + 1] - 0x20)])
            i += 2
        }
        return out
    }
}
