import AppStoreServer
import FoundationEssentials

/// `verify --summary`: what an engineer on call wants to read, in a few lines.
enum Summary {
    static func lines(kind: SignedPayloadKind, json: [UInt8], setup: VerifierSetup, deep: Bool) -> [String] {
        guard let object = JSONValue.parse(json), object.object != nil else { return ["VALID"] }
        let signedBy = setup.environment == .xcode || setup.environment == .localTesting
            ? "not signed by Apple (\(setup.environment.rawValue) data: no signature check)"
            : "\(setup.anchors == AppleRoot.g3.name ? "signed by Apple" : "signed under the given root") (chain to \(setup.anchors)\(setup.online ? ", OCSP checked" : ", offline"))"
        var out = ["VALID \(label(kind))\(deep ? " (nested signed data verified too)" : ""), \(signedBy)"]
        func add(_ name: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            out.append("  " + name.padded(to: 13) + value)
        }
        switch kind {
        case .notification:
            let n = deep ? objectValue(object["notification"]) ?? .object([]) : object
            add("type", [string(n["notificationType"]), string(n["subtype"])].compactMap { $0 }.joined(separator: " / "))
            let data = objectValue(n["data"]) ?? objectValue(n["summary"]) ?? .object([])
            add("app", identity(data))
            add("signed", date(n["signedDate"]))
            add("notification", string(n["notificationUUID"]))
            if let t = objectValue(object["transaction"]) { add("transaction", transaction(t)) }
            if let r = objectValue(object["renewalInfo"]) { add("renewal", renewal(r)) }
            if let a = objectValue(object["appTransaction"]) { add("app bought", date(a["originalPurchaseDate"])) }
        case .transaction:
            add("app", identity(object))
            add("transaction", transaction(object))
            add("signed", date(object["signedDate"]))
        case .renewalInfo:
            add("environment", string(object["environment"]))
            add("renewal", renewal(object))
            add("signed", date(object["signedDate"]))
        case .appTransaction:
            add("app", identity(object))
            add("purchased", date(object["originalPurchaseDate"]))
            add("version", string(object["originalApplicationVersion"]).map { "originally \($0), now \(string(object["applicationVersion"]) ?? "?")" })
        case .realtimeRequest:
            add("app", identity(object))
            add("request", string(object["requestIdentifier"]))
            add("product", string(object["productId"]))
            add("locale", string(object["userLocale"]))
        }
        return out
    }

    static func label(_ kind: SignedPayloadKind) -> String {
        switch kind {
        case .notification: "notification"
        case .transaction: "transaction"
        case .renewalInfo: "renewal info"
        case .appTransaction: "app transaction"
        case .realtimeRequest: "realtime request"
        }
    }

    static func identity(_ o: JSONValue) -> String? {
        var parts: [String] = []
        if let b = string(o["bundleId"]) { parts.append(b) }
        if let a = string(o["appAppleId"]) { parts.append("App Apple ID \(a)") }
        if let e = string(o["environment"]) ?? string(o["receiptType"]) { parts.append(e) }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    static func transaction(_ t: JSONValue) -> String {
        var parts = [string(t["transactionId"]).map { "id \($0)" } ?? "id ?"]
        if let o = string(t["originalTransactionId"]), o != string(t["transactionId"]) { parts.append("original \(o)") }
        if let p = string(t["productId"]) { parts.append("product \(p)") }
        if let ty = string(t["type"]) { parts.append(ty) }
        if let d = date(t["purchaseDate"]) { parts.append("purchased \(d)") }
        if let d = date(t["expiresDate"]) { parts.append("expires \(d)") }
        if let d = date(t["revocationDate"]) { parts.append("REVOKED \(d)") }
        return parts.joined(separator: ", ")
    }

    static func renewal(_ r: JSONValue) -> String {
        var parts: [String] = []
        if let s = string(r["autoRenewStatus"]) { parts.append(s == "1" ? "auto-renew on" : "auto-renew off") }
        if let p = string(r["autoRenewProductId"]) { parts.append("renews to \(p)") }
        if let d = date(r["renewalDate"]) { parts.append("next \(d)") }
        if let e = string(r["expirationIntent"]) { parts.append("expiration intent \(e)") }
        return parts.joined(separator: ", ")
    }

    static func objectValue(_ v: JSONValue?) -> JSONValue? {
        v?.object != nil ? v : nil
    }

    /// A string, or a number as spelled.
    static func string(_ v: JSONValue?) -> String? { v?.text }

    /// Milliseconds since 1970 as ISO 8601 UTC.
    static func date(_ v: JSONValue?) -> String? {
        guard let ms = v?.doubleValue else { return nil }
        return iso8601(Date(timeIntervalSince1970: ms / 1000))
    }
}

/// A date as ISO 8601 UTC (2025-10-01T07:08:38Z), for the summary and decode's certificate dates.
func iso8601(_ date: Date) -> String {
    date.formatted(.iso8601)
}
