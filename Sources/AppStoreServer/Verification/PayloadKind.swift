import FoundationEssentials

/// The five kinds of App Store signed payload.
public enum SignedPayloadKind: String, Hashable, Sendable, CaseIterable {
    case notification
    case transaction
    case renewalInfo
    case appTransaction
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
struct PayloadProbe: Decodable {
    let kind: SignedPayloadKind?
    let signedDate: Date?
    let receiptCreationDate: Date?

    private enum Key: String, CodingKey {
        case notificationType, receiptType, transactionId, autoRenewStatus, autoRenewProductId, userLocale,
             requestIdentifier, signedDate, receiptCreationDate
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        if c.contains(.notificationType) {
            kind = .notification
        } else if c.contains(.receiptType) {
            kind = .appTransaction
        } else if c.contains(.userLocale) && c.contains(.requestIdentifier) {
            kind = .realtimeRequest
        } else if c.contains(.autoRenewStatus) || c.contains(.autoRenewProductId) {
            // Renewal-only keys first: a renewal info must stay one even if Apple adds a transactionId to it.
            kind = .renewalInfo
        } else if c.contains(.transactionId) {
            kind = .transaction
        } else {
            kind = nil
        }
        signedDate = try? c.decodeIfPresent(Date.self, forKey: .signedDate)
        receiptCreationDate = try? c.decodeIfPresent(Date.self, forKey: .receiptCreationDate)
    }

    /// The date the chain is validated at when online checks are off (Apple's rule).
    func effectiveDate(for kind: SignedPayloadKind) -> Date? {
        kind == .appTransaction ? (receiptCreationDate ?? signedDate) : signedDate
    }
}

extension JSONDecoder {
    /// Apple's wire conventions: dates are (possibly fractional, possibly negative) milliseconds since 1970.
    static func appStore() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .millisecondsSince1970
        return d
    }
}
