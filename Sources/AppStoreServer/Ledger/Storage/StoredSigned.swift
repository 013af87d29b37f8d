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
        guard let form = makeCompact(jws) else { return (asReceived, []) }
        // Never lose a byte: the form must give back exactly what was received.
        let known = Dictionary(form.headers.map { ($0.digest, $0.text) }, uniquingKeysWith: { a, _ in a })
        guard let back = try? expand(form.text, eventId: 0, header: { known[$0] }), back == jws else { return (asReceived, []) }
        return form
    }

    private static func makeCompact(_ jws: String) -> (text: String, headers: [Header])? {
        let u = Array(jws.utf8)
        guard u.first != UInt8(ascii: "~") else { return nil }
        let parts = u.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count >= minimumHeader, !parts[2].contains(UInt8(ascii: ",")) else { return nil }
        let outer = Header(text: String(decoding: parts[0], as: UTF8.self))
        var headers = [outer]
        let payloadSegment = Array(parts[1])
        var payloadForm: [UInt8] = [UInt8(ascii: "b")] + payloadSegment
        var refs: [String] = []
        // The decoder takes canonical base64url only (no padding, no stray bits), so a decoded segment encodes
        // back to itself: `expand` gives back the received bytes (and `compact` checks the whole form once more).
        if let json = payloadSegment.withUnsafeBytes({ Base64.decode($0, alphabet: .url) }), !json.contains(0),
           String(validating: json, as: UTF8.self) != nil {
            var reduced: [UInt8] = []
            reduced.reserveCapacity(json.count)
            var i = 0
            // A nested compact JWS is a JSON string `"<header>.<payload>.<signature>"`: its header is a run of
            // base64url characters after a quote, ending at a dot; its payload the run after that dot.
            while i < json.count {
                if json[i] == UInt8(ascii: "\""), let end = nestedHeaderEnd(json, from: i + 1) {
                    reduced.append(json[i])
                    let h = Header(text: String(decoding: json[(i + 1)..<end], as: UTF8.self))
                    let at = reduced.count
                    let digest = h.digest == outer.digest ? "" : h.digest  // empty: the outer header's
                    if h.digest != outer.digest { headers.append(h) }
                    // The nested payload decoded too, when that gives back its bytes and is text.
                    var j = end + 1
                    while j < json.count, isBase64URL(json[j]) { j += 1 }
                    if j < json.count, json[j] == UInt8(ascii: "."), j > end + 1,
                       let decoded = json[(end + 1)..<j].withUnsafeBytes({ Base64.decode($0, alphabet: .url) }),
                       !decoded.contains(0), String(validating: decoded, as: UTF8.self) != nil {
                        refs.append("\(at):\(digest):\(decoded.count)")
                        reduced.append(UInt8(ascii: "."))
                        reduced.append(contentsOf: decoded)
                        i = j
                    } else {
                        refs.append("\(at):\(digest)")
                        i = end
                    }
                    continue
                }
                // Up to the next quote in one copy (the text between JSON strings' starts).
                let next = json[(i + 1)...].firstIndex(of: UInt8(ascii: "\"")) ?? json.count
                reduced.append(contentsOf: json[i..<next])
                i = next
            }
            // Apple's member names (a third of a payload) as two bytes each, when the text has no 0x01 of its own.
            payloadForm = reduced.contains(0x01) ? [UInt8(ascii: "j")] + reduced : [UInt8(ascii: "k")] + MemberNames.shorten(reduced)
        }
        let text = "~1.\(outer.digest).\(String(decoding: parts[2], as: UTF8.self)).\(refs.joined(separator: ",")).\(String(decoding: payloadForm, as: UTF8.self))"
        return (text, headers)
    }

    /// The end of a base64url run from `start`, when it is at least `minimumHeader` long and a dot follows.
    private static func nestedHeaderEnd(_ b: [UInt8], from start: Int) -> Int? {
        var j = start
        while j < b.count, isBase64URL(b[j]) { j += 1 }
        guard j - start >= minimumHeader, j < b.count, b[j] == UInt8(ascii: ".") else { return nil }
        return j
    }

    private static func isBase64URL(_ c: UInt8) -> Bool {
        (65...90).contains(c) || (97...122).contains(c) || (48...57).contains(c) || c == 45 || c == 95
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
        func corrupt(_ why: String) -> LedgerError {
            .storage("event \(eventId): its stored JWS is corrupt: \(why) (`appstoreserver ledger check` lists such rows)")
        }
        func find(_ digest: Substring) throws(LedgerError) -> String {
            guard let t = try header(String(digest)) else {
                throw corrupt("its certificate chain \(QuotedText.quote(String(digest))) is missing from jws_headers")
            }
            return t
        }
        let parts = stored.split(separator: ".", maxSplits: 4, omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "~1", let kind = parts[4].utf8.first else {
            throw corrupt("not a stored form this library knows")
        }
        let outer = try find(parts[1])
        var payload = Array(parts[4].utf8.dropFirst())
        var form = kind
        if kind == UInt8(ascii: "k") {
            guard let full = MemberNames.expand(payload) else { throw corrupt("an unknown member name code") }
            payload = full
            form = UInt8(ascii: "j")
        }
        switch form {
        case UInt8(ascii: "b"):
            guard parts[3].isEmpty else { throw corrupt("nested references in a base64url payload") }
        case UInt8(ascii: "j"):
            if !parts[3].isEmpty {
                let refs: [Reference]
                switch references(parts[3].utf8, in: payload) {
                case .success(let r): refs = r
                case .failure(let bad): throw corrupt("a nested reference \(QuotedText.quote(bad.text)) is out of place")
                }
                // From the last: each offset is into the stored text, before the later ones are expanded.
                for r in refs.reversed() {
                    let h = r.digest.isEmpty ? outer : try find(r.digest[...])
                    if let n = r.length {
                        let segment = Array(Base64.encode(payload[(r.at + 1)..<(r.at + 1 + n)], alphabet: .url).utf8)
                        payload.replaceSubrange(r.at..<(r.at + 1 + n), with: Array(h.utf8) + [UInt8(ascii: ".")] + segment)
                    } else {
                        payload.insert(contentsOf: Array(h.utf8), at: r.at)
                    }
                }
            }
            payload = Array(Base64.encode(payload, alphabet: .url).utf8)
        default:
            throw corrupt("unknown payload form")
        }
        return outer + "." + String(decoding: payload, as: UTF8.self) + "." + parts[2]
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
        guard u.count > 3, u[0] == UInt8(ascii: "~"), u[1] == UInt8(ascii: "1"), u[2] == UInt8(ascii: ".") else { return nil }
        // ~1.<digest>.<signature>.<refs>.<form><payload>: the payload starts after the fourth dot.
        var dots: [Int] = []
        var i = 2
        while dots.count < 4, i < u.count {
            if u[i] == UInt8(ascii: ".") { dots.append(i) }
            i += 1
        }
        guard dots.count == 4, dots[3] + 1 < u.count else { return nil }
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
            var end = r.at + 2 + r.length
            while end < payload.count, isBase64URL(payload[end]) { end += 1 }
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
    init(text: String) {
        // Millions of values share a few chains: the last header's digest is reused when the text is the same
        // (a comparison of bytes, not a SHA-256 and a base64 per JWS).
        if let hit = Self.last.withLock({ $0.flatMap { $0.text == text ? $0 : nil } }) {
            self = hit
            return
        }
        self.init(digest: StoredSigned.digest(text), text: text)
        let made = self
        Self.last.withLock { $0 = made }
    }

    private static let last = Locked<StoredSigned.Header?>(nil)
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
    static func shorten(_ text: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
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
            let next = text[(i + 1)...].firstIndex(of: UInt8(ascii: "\"")) ?? text.count
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
            let next = text[i...].firstIndex(of: 0x01) ?? text.count
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
