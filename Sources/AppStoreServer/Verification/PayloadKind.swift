import FoundationEssentials

/// The five kinds of App Store signed payload.
public enum SignedPayloadKind: String, Hashable, Sendable, CaseIterable {
    /// A notification V2 payload (`ResponseBodyV2DecodedPayload`).
    case notification
    /// A signed transaction (`JWSTransactionDecodedPayload`).
    case transaction
    /// Signed renewal info (`JWSRenewalInfoDecodedPayload`).
    case renewalInfo
    /// A signed app transaction (`AppTransaction`).
    case appTransaction
    /// A Retention Messaging realtime request (`DecodedRealtimeRequestBody`).
    case realtimeRequest

    var article: String {
        switch self {
        case .notification: "a notification (ResponseBodyV2DecodedPayload)"
        case .transaction: "a transaction (JWSTransactionDecodedPayload)"
        case .renewalInfo: "a renewal info (JWSRenewalInfoDecodedPayload)"
        case .appTransaction: "an app transaction (AppTransaction)"
        case .realtimeRequest: "a retention-messaging realtime request (DecodedRealtimeRequestBody)"
        }
    }

    var operation: String {
        switch self {
        case .notification: "verifyAndDecodeNotification"
        case .transaction: "verifyAndDecodeTransaction"
        case .renewalInfo: "verifyAndDecodeRenewalInfo"
        case .appTransaction: "verifyAndDecodeAppTransaction"
        case .realtimeRequest: "verifyAndDecodeRealtimeRequest"
        }
    }
}

/// What a payload looks like from its top-level keys, and the dates that fix its effective verification time.
/// Used when the model does not decode or the identity checks fail, to say precisely what went wrong.
struct PayloadProbe {
    let kind: SignedPayloadKind?
    let signedDate: Date?
    let receiptCreationDate: Date?

    /// nil when the payload is not a JSON object.
    init?(_ json: JSONValue) {
        guard case .object(let members) = json else { return nil }
        func has(_ key: String) -> Bool { members.contains { $0.key == key } }
        if has("notificationType") {
            kind = .notification
        } else if has("receiptType") {
            kind = .appTransaction
        } else if has("userLocale") && has("requestIdentifier") {
            kind = .realtimeRequest
        } else if has("autoRenewStatus") || has("autoRenewProductId") {
            // Renewal-only keys first: a renewal info must stay one even if Apple adds a transactionId to it.
            kind = .renewalInfo
        } else if has("transactionId") {
            kind = .transaction
        } else {
            kind = nil
        }
        signedDate = json["signedDate"].flatMap { try? Date(json: $0, strict: false) }
        receiptCreationDate = json["receiptCreationDate"].flatMap { try? Date(json: $0, strict: false) }
    }

    /// The date the chain is validated at when online checks are off (Apple's rule): the same date the decoded model
    /// gives (`SignedPayloadModel.effectiveDate`), so a payload is checked at one date whichever path reads it.
    func effectiveDate(for kind: SignedPayloadKind) -> Date? {
        kind == .appTransaction ? receiptCreationDate : signedDate
    }
}
