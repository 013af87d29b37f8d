import FoundationEssentials

/// Every App Store Server API endpoint (the 31 of Apple's libraries) and the 6 Advanced Commerce API server
/// endpoints. `rawValue` is Apple's Swift method name; it is also the endpoint's name at the C ABI.
public enum AppStoreServerAPIEndpoint: String, CaseIterable, Hashable, Sendable {
    // Transactions and subscriptions
    case getTransactionInfo
    case getTransactionHistory  // version 2
    case getTransactionHistoryV1  // deprecated by Apple; kept for parity
    case getAllSubscriptionStatuses
    case getRefundHistory
    case lookUpOrderId
    case getAppTransactionInfo
    case finishTransaction
    case sendConsumptionData  // Send Consumption Information V1 (deprecated)
    case sendConsumptionInformation  // V2
    case setAppAccountToken
    case extendSubscriptionRenewalDate
    case extendRenewalDateForAllActiveSubscribers
    case getStatusOfSubscriptionRenewalDateExtensions
    // Notifications
    case requestTestNotification
    case getTestNotificationStatus
    case getNotificationHistory
    // Retention Messaging
    case uploadImage
    case deleteImage
    case getImageList
    case uploadMessage
    case deleteMessage
    case getMessageList
    case configureDefaultMessage
    case deleteDefaultMessage
    case getDefaultMessage
    case configureRealtimeURL
    case deleteRealtimeURL
    case getRealtimeURL
    case initiatePerformanceTest
    case getPerformanceTestResults
    // Advanced Commerce API (server endpoints)
    case cancelSubscription
    case changeSubscriptionMetadata
    case changeSubscriptionPrice
    case migrateSubscription
    case revokeSubscription
    case requestTransactionRefund

    public var name: String { rawValue }

    public init?(name: String) { self.init(rawValue: name) }

    public var method: String {
        switch self {
        case .getTransactionInfo, .getTransactionHistory, .getTransactionHistoryV1, .getAllSubscriptionStatuses,
             .getRefundHistory, .lookUpOrderId, .getAppTransactionInfo, .getStatusOfSubscriptionRenewalDateExtensions,
             .getTestNotificationStatus, .getImageList, .getMessageList, .getDefaultMessage, .getRealtimeURL,
             .getPerformanceTestResults:
            "GET"
        case .finishTransaction, .extendRenewalDateForAllActiveSubscribers, .requestTestNotification,
             .getNotificationHistory, .initiatePerformanceTest, .cancelSubscription, .changeSubscriptionMetadata,
             .changeSubscriptionPrice, .migrateSubscription, .revokeSubscription, .requestTransactionRefund:
            "POST"
        case .sendConsumptionData, .sendConsumptionInformation, .setAppAccountToken, .extendSubscriptionRenewalDate,
             .uploadImage, .uploadMessage, .configureDefaultMessage, .configureRealtimeURL:
            "PUT"
        case .deleteImage, .deleteMessage, .deleteDefaultMessage, .deleteRealtimeURL:
            "DELETE"
        }
    }

    /// The path with `{parameter}` placeholders (documentation; the builder fills them percent-encoded).
    public var pathTemplate: String {
        switch self {
        case .getTransactionInfo: "/inApps/v1/transactions/{transactionId}"
        case .getTransactionHistory: "/inApps/v2/history/{anyTransactionId}"
        case .getTransactionHistoryV1: "/inApps/v1/history/{anyTransactionId}"
        case .getAllSubscriptionStatuses: "/inApps/v1/subscriptions/{anyTransactionId}"
        case .getRefundHistory: "/inApps/v2/refund/lookup/{anyTransactionId}"
        case .lookUpOrderId: "/inApps/v1/lookup/{orderId}"
        case .getAppTransactionInfo: "/inApps/v1/transactions/appTransactions/{anyTransactionId}"
        case .finishTransaction: "/inApps/v1/transactions/{transactionId}/finish"
        case .sendConsumptionData: "/inApps/v1/transactions/consumption/{transactionId}"
        case .sendConsumptionInformation: "/inApps/v2/transactions/consumption/{transactionId}"
        case .setAppAccountToken: "/inApps/v1/transactions/{originalTransactionId}/appAccountToken"
        case .extendSubscriptionRenewalDate: "/inApps/v1/subscriptions/extend/{originalTransactionId}"
        case .extendRenewalDateForAllActiveSubscribers: "/inApps/v1/subscriptions/extend/mass"
        case .getStatusOfSubscriptionRenewalDateExtensions: "/inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}"
        case .requestTestNotification: "/inApps/v1/notifications/test"
        case .getTestNotificationStatus: "/inApps/v1/notifications/test/{testNotificationToken}"
        case .getNotificationHistory: "/inApps/v1/notifications/history"
        case .uploadImage, .deleteImage: "/inApps/v1/messaging/image/{imageIdentifier}"
        case .getImageList: "/inApps/v1/messaging/image/list"
        case .uploadMessage, .deleteMessage: "/inApps/v1/messaging/message/{messageIdentifier}"
        case .getMessageList: "/inApps/v1/messaging/message/list"
        case .configureDefaultMessage, .deleteDefaultMessage, .getDefaultMessage: "/inApps/v1/messaging/default/{productId}/{locale}"
        case .configureRealtimeURL, .deleteRealtimeURL, .getRealtimeURL: "/inApps/v1/messaging/realtime/url"
        case .initiatePerformanceTest: "/inApps/v1/messaging/performanceTest"
        case .getPerformanceTestResults: "/inApps/v1/messaging/performanceTest/result/{requestId}"
        case .cancelSubscription: "/advancedCommerce/v1/subscription/cancel/{transactionId}"
        case .changeSubscriptionMetadata: "/advancedCommerce/v1/subscription/changeMetadata/{transactionId}"
        case .changeSubscriptionPrice: "/advancedCommerce/v1/subscription/changePrice/{transactionId}"
        case .migrateSubscription: "/advancedCommerce/v1/subscription/migrate/{transactionId}"
        case .revokeSubscription: "/advancedCommerce/v1/subscription/revoke/{transactionId}"
        case .requestTransactionRefund: "/advancedCommerce/v1/transaction/requestRefund/{transactionId}"
        }
    }

    /// The response model, or nil for endpoints that answer without a body.
    public var responseType: (any Decodable.Type)? {
        switch self {
        case .getTransactionInfo: return TransactionInfoResponse.self
        case .getTransactionHistory, .getTransactionHistoryV1: return HistoryResponse.self
        case .getAllSubscriptionStatuses: return StatusResponse.self
        case .getRefundHistory: return RefundHistoryResponse.self
        case .lookUpOrderId: return OrderLookupResponse.self
        case .getAppTransactionInfo: return AppTransactionInfoResponse.self
        case .extendSubscriptionRenewalDate: return ExtendRenewalDateResponse.self
        case .extendRenewalDateForAllActiveSubscribers: return MassExtendRenewalDateResponse.self
        case .getStatusOfSubscriptionRenewalDateExtensions: return MassExtendRenewalDateStatusResponse.self
        case .requestTestNotification: return SendTestNotificationResponse.self
        case .getTestNotificationStatus: return CheckTestNotificationResponse.self
        case .getNotificationHistory: return NotificationHistoryResponse.self
        case .getImageList: return GetImageListResponse.self
        case .getMessageList: return GetMessageListResponse.self
        case .getDefaultMessage: return DefaultConfigurationResponse.self
        case .getRealtimeURL: return RealtimeUrlResponse.self
        case .initiatePerformanceTest: return PerformanceTestResponse.self
        case .getPerformanceTestResults: return PerformanceTestResultResponse.self
        case .cancelSubscription: return AdvancedCommerceSubscriptionCancelResponse.self
        case .changeSubscriptionMetadata: return AdvancedCommerceSubscriptionChangeMetadataResponse.self
        case .changeSubscriptionPrice: return AdvancedCommerceSubscriptionPriceChangeResponse.self
        case .migrateSubscription: return AdvancedCommerceSubscriptionMigrateResponse.self
        case .revokeSubscription: return AdvancedCommerceSubscriptionRevokeResponse.self
        case .requestTransactionRefund: return AdvancedCommerceRequestRefundResponse.self
        case .finishTransaction, .sendConsumptionData, .sendConsumptionInformation, .setAppAccountToken, .uploadImage,
             .deleteImage, .uploadMessage, .deleteMessage, .configureDefaultMessage, .deleteDefaultMessage,
             .configureRealtimeURL, .deleteRealtimeURL:
            return nil
        }
    }

    /// Advanced Commerce endpoints name their error codes from `AdvancedCommerceAPIError` first.
    public var isAdvancedCommerce: Bool {
        switch self {
        case .cancelSubscription, .changeSubscriptionMetadata, .changeSubscriptionPrice, .migrateSubscription,
             .revokeSubscription, .requestTransactionRefund:
            true
        default: false
        }
    }

    /// The keys of the endpoint's parameters object at the C ABI (`params_json`); the required ones first.
    /// Path parameters are strings (UUIDs for image/message identifiers); `body` is the JSON request model.
    public var parameterKeys: (required: [String], optional: [String]) {
        switch self {
        case .getTransactionInfo, .finishTransaction: (["transactionId"], [])
        case .getTransactionHistory, .getTransactionHistoryV1:
            (["anyTransactionId"], ["revision", "startDate", "endDate", "productIds", "productTypes", "sort",
                                    "subscriptionGroupIdentifiers", "inAppOwnershipType", "revoked"])
        case .getAllSubscriptionStatuses: (["anyTransactionId"], ["status"])
        case .getRefundHistory: (["anyTransactionId"], ["revision"])
        case .lookUpOrderId: (["orderId"], [])
        case .getAppTransactionInfo: (["anyTransactionId"], [])
        case .sendConsumptionData, .sendConsumptionInformation: (["transactionId", "body"], [])
        case .setAppAccountToken, .extendSubscriptionRenewalDate: (["originalTransactionId", "body"], [])
        case .extendRenewalDateForAllActiveSubscribers, .configureRealtimeURL, .initiatePerformanceTest: (["body"], [])
        case .getStatusOfSubscriptionRenewalDateExtensions: (["productId", "requestIdentifier"], [])
        case .requestTestNotification, .getImageList, .getMessageList, .deleteRealtimeURL, .getRealtimeURL: ([], [])
        case .getTestNotificationStatus: (["testNotificationToken"], [])
        case .getNotificationHistory: (["body"], ["paginationToken"])
        case .uploadImage: (["imageIdentifier", "image"], ["imageSize"])
        case .deleteImage: (["imageIdentifier"], [])
        case .uploadMessage: (["messageIdentifier", "body"], [])
        case .deleteMessage: (["messageIdentifier"], [])
        case .configureDefaultMessage: (["productId", "locale", "body"], [])
        case .deleteDefaultMessage, .getDefaultMessage: (["productId", "locale"], [])
        case .getPerformanceTestResults: (["requestId"], [])
        case .cancelSubscription, .changeSubscriptionMetadata, .changeSubscriptionPrice, .migrateSubscription,
             .revokeSubscription, .requestTransactionRefund:
            (["transactionId", "body"], [])
        }
    }
}

/// `getTransactionHistory`'s API version (Apple's `GetTransactionHistoryVersion`). v1 is deprecated by Apple.
public enum GetTransactionHistoryVersion: String, Hashable, Sendable {
    case v1
    case v2
}

/// One endpoint call with its parameters: what the request builder turns into an `HTTPRequest`.
public enum AppStoreServerAPIRequest: Hashable, Sendable {
    case getTransactionInfo(transactionId: String)
    case getTransactionHistory(anyTransactionId: String, revision: String?, transactionHistoryRequest: TransactionHistoryRequest,
                               version: GetTransactionHistoryVersion)
    case getAllSubscriptionStatuses(anyTransactionId: String, status: [Status]?)
    case getRefundHistory(anyTransactionId: String, revision: String?)
    case lookUpOrderId(orderId: String)
    case getAppTransactionInfo(anyTransactionId: String)
    case finishTransaction(transactionId: String)
    case sendConsumptionData(transactionId: String, consumptionRequest: ConsumptionRequestV1)
    case sendConsumptionInformation(transactionId: String, consumptionRequest: ConsumptionRequest)
    case setAppAccountToken(originalTransactionId: String, updateAppAccountTokenRequest: UpdateAppAccountTokenRequest)
    case extendSubscriptionRenewalDate(originalTransactionId: String, extendRenewalDateRequest: ExtendRenewalDateRequest)
    case extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: MassExtendRenewalDateRequest)
    case getStatusOfSubscriptionRenewalDateExtensions(requestIdentifier: String, productId: String)
    case requestTestNotification
    case getTestNotificationStatus(testNotificationToken: String)
    case getNotificationHistory(paginationToken: String?, notificationHistoryRequest: NotificationHistoryRequest)
    case uploadImage(imageIdentifier: UUID, image: [UInt8], imageSize: ImageSize?)
    case deleteImage(imageIdentifier: UUID)
    case getImageList
    case uploadMessage(messageIdentifier: UUID, uploadMessageRequestBody: UploadMessageRequestBody)
    case deleteMessage(messageIdentifier: UUID)
    case getMessageList
    case configureDefaultMessage(productId: String, locale: String, defaultConfigurationRequest: DefaultConfigurationRequest)
    case deleteDefaultMessage(productId: String, locale: String)
    case getDefaultMessage(productId: String, locale: String)
    case configureRealtimeURL(realtimeUrlRequest: RealtimeUrlRequest)
    case deleteRealtimeURL
    case getRealtimeURL
    case initiatePerformanceTest(performanceTestRequest: PerformanceTestRequest)
    case getPerformanceTestResults(requestId: String)
    case cancelSubscription(transactionId: String, request: AdvancedCommerceSubscriptionCancelRequest)
    case changeSubscriptionMetadata(transactionId: String, request: AdvancedCommerceSubscriptionChangeMetadataRequest)
    case changeSubscriptionPrice(transactionId: String, request: AdvancedCommerceSubscriptionPriceChangeRequest)
    case migrateSubscription(transactionId: String, request: AdvancedCommerceSubscriptionMigrateRequest)
    case revokeSubscription(transactionId: String, request: AdvancedCommerceSubscriptionRevokeRequest)
    case requestTransactionRefund(transactionId: String, request: AdvancedCommerceRequestRefundRequest)

    public var endpoint: AppStoreServerAPIEndpoint {
        switch self {
        case .getTransactionInfo: .getTransactionInfo
        case .getTransactionHistory(_, _, _, let version): version == .v1 ? .getTransactionHistoryV1 : .getTransactionHistory
        case .getAllSubscriptionStatuses: .getAllSubscriptionStatuses
        case .getRefundHistory: .getRefundHistory
        case .lookUpOrderId: .lookUpOrderId
        case .getAppTransactionInfo: .getAppTransactionInfo
        case .finishTransaction: .finishTransaction
        case .sendConsumptionData: .sendConsumptionData
        case .sendConsumptionInformation: .sendConsumptionInformation
        case .setAppAccountToken: .setAppAccountToken
        case .extendSubscriptionRenewalDate: .extendSubscriptionRenewalDate
        case .extendRenewalDateForAllActiveSubscribers: .extendRenewalDateForAllActiveSubscribers
        case .getStatusOfSubscriptionRenewalDateExtensions: .getStatusOfSubscriptionRenewalDateExtensions
        case .requestTestNotification: .requestTestNotification
        case .getTestNotificationStatus: .getTestNotificationStatus
        case .getNotificationHistory: .getNotificationHistory
        case .uploadImage: .uploadImage
        case .deleteImage: .deleteImage
        case .getImageList: .getImageList
        case .uploadMessage: .uploadMessage
        case .deleteMessage: .deleteMessage
        case .getMessageList: .getMessageList
        case .configureDefaultMessage: .configureDefaultMessage
        case .deleteDefaultMessage: .deleteDefaultMessage
        case .getDefaultMessage: .getDefaultMessage
        case .configureRealtimeURL: .configureRealtimeURL
        case .deleteRealtimeURL: .deleteRealtimeURL
        case .getRealtimeURL: .getRealtimeURL
        case .initiatePerformanceTest: .initiatePerformanceTest
        case .getPerformanceTestResults: .getPerformanceTestResults
        case .cancelSubscription: .cancelSubscription
        case .changeSubscriptionMetadata: .changeSubscriptionMetadata
        case .changeSubscriptionPrice: .changeSubscriptionPrice
        case .migrateSubscription: .migrateSubscription
        case .revokeSubscription: .revokeSubscription
        case .requestTransactionRefund: .requestTransactionRefund
        }
    }
}
