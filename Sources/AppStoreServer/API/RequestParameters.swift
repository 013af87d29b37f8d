import FoundationEssentials

extension AppStoreServerAPIRequest {
    /// An endpoint call from its parameters as a JSON object (the C ABI's `params_json`; see
    /// `AppStoreServerAPIEndpoint.parameterKeys`). Path parameters are strings, `body` is the request model as JSON
    /// (Apple's keys), dates are milliseconds since 1970, `image` is standard base64. Unknown keys are rejected so
    /// a misspelt parameter is never silently dropped.
    public init(endpoint: AppStoreServerAPIEndpoint, parametersJSON: [UInt8]) throws(AppStoreServerAPIError) {
        let text = parametersJSON.isEmpty ? Array("{}".utf8) : parametersJSON
        let decoder = APIJSON.decoder()
        decoder.userInfo[ParametersEnvelope.endpointKey] = EndpointBox(endpoint)
        do {
            self = try decoder.decode(ParametersEnvelope.self, from: Data(text)).request
        } catch let e as AppStoreServerAPIError {
            throw e
        } catch {
            throw .argument("\(endpoint.name): params_json: \(ParametersEnvelope.describe(error))", endpoint)
        }
    }
}

private final class EndpointBox: Sendable {
    let endpoint: AppStoreServerAPIEndpoint
    init(_ endpoint: AppStoreServerAPIEndpoint) { self.endpoint = endpoint }
}

private struct ParameterKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ s: String) { stringValue = s }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

private struct ParametersEnvelope: Decodable {
    static let endpointKey = CodingUserInfoKey(rawValue: "appstoreserver.endpoint")!
    let request: AppStoreServerAPIRequest

    static func describe(_ error: any Error) -> String {
        if let e = error as? DecodingError, case .dataCorrupted(let ctx) = e, ctx.codingPath.isEmpty {
            return "not a JSON object (\(ctx.debugDescription))"
        }
        return DecodingErrorText.describe(error)
    }

    init(from decoder: any Decoder) throws {
        guard let box = decoder.userInfo[Self.endpointKey] as? EndpointBox else {
            throw AppStoreServerAPIError.argument("internal: no endpoint")
        }
        let endpoint = box.endpoint
        let c: KeyedDecodingContainer<ParameterKey>
        do { c = try decoder.container(keyedBy: ParameterKey.self) } catch {
            throw AppStoreServerAPIError.argument("\(endpoint.name): params_json must be a JSON object", endpoint)
        }
        let keys = endpoint.parameterKeys
        let allowed = Set(keys.required + keys.optional)
        for key in c.allKeys where !allowed.contains(key.stringValue) {
            let list = (keys.required + keys.optional).map { "\"\($0)\"" }.joined(separator: ", ")
            throw AppStoreServerAPIError.argument(
                "\(endpoint.name): unknown parameter \"\(key.stringValue)\" (parameters: \(list.isEmpty ? "none" : list))", endpoint)
        }
        for key in keys.required where !c.contains(ParameterKey(key)) {
            throw AppStoreServerAPIError.argument("\(endpoint.name): missing required parameter \"\(key)\"", endpoint)
        }
        func s(_ k: String) throws -> String { try c.decode(String.self, forKey: ParameterKey(k)) }
        func os(_ k: String) throws -> String? { try c.decodeIfPresent(String.self, forKey: ParameterKey(k)) }
        func body<T: Decodable>(_ t: T.Type) throws -> T { try c.decode(T.self, forKey: ParameterKey("body")) }
        func uuid(_ k: String) throws -> UUID {
            let text = try s(k)
            guard let u = UUID(uuidString: text) else {
                throw AppStoreServerAPIError.argument("\(endpoint.name): \(k) \"\(text)\" is not a UUID", endpoint)
            }
            return u
        }

        switch endpoint {
        case .getTransactionInfo: request = .getTransactionInfo(transactionId: try s("transactionId"))
        case .getTransactionHistory, .getTransactionHistoryV1:
            let filters = try TransactionHistoryRequest(from: decoder)
            request = .getTransactionHistory(anyTransactionId: try s("anyTransactionId"), revision: try os("revision"),
                                             transactionHistoryRequest: filters,
                                             version: endpoint == .getTransactionHistoryV1 ? .v1 : .v2)
        case .getAllSubscriptionStatuses:
            request = .getAllSubscriptionStatuses(anyTransactionId: try s("anyTransactionId"),
                                                  status: try c.decodeIfPresent([Status].self, forKey: ParameterKey("status")))
        case .getRefundHistory: request = .getRefundHistory(anyTransactionId: try s("anyTransactionId"), revision: try os("revision"))
        case .lookUpOrderId: request = .lookUpOrderId(orderId: try s("orderId"))
        case .getAppTransactionInfo: request = .getAppTransactionInfo(anyTransactionId: try s("anyTransactionId"))
        case .finishTransaction: request = .finishTransaction(transactionId: try s("transactionId"))
        case .sendConsumptionData:
            request = .sendConsumptionData(transactionId: try s("transactionId"), consumptionRequest: try body(ConsumptionRequestV1.self))
        case .sendConsumptionInformation:
            request = .sendConsumptionInformation(transactionId: try s("transactionId"), consumptionRequest: try body(ConsumptionRequest.self))
        case .setAppAccountToken:
            request = .setAppAccountToken(originalTransactionId: try s("originalTransactionId"),
                                          updateAppAccountTokenRequest: try body(UpdateAppAccountTokenRequest.self))
        case .extendSubscriptionRenewalDate:
            request = .extendSubscriptionRenewalDate(originalTransactionId: try s("originalTransactionId"),
                                                     extendRenewalDateRequest: try body(ExtendRenewalDateRequest.self))
        case .extendRenewalDateForAllActiveSubscribers:
            request = .extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: try body(MassExtendRenewalDateRequest.self))
        case .getStatusOfSubscriptionRenewalDateExtensions:
            request = .getStatusOfSubscriptionRenewalDateExtensions(requestIdentifier: try s("requestIdentifier"), productId: try s("productId"))
        case .requestTestNotification: request = .requestTestNotification
        case .getTestNotificationStatus: request = .getTestNotificationStatus(testNotificationToken: try s("testNotificationToken"))
        case .getNotificationHistory:
            request = .getNotificationHistory(paginationToken: try os("paginationToken"),
                                              notificationHistoryRequest: try body(NotificationHistoryRequest.self))
        case .uploadImage:
            let text = try s("image")
            guard let image = Base64.decode(text, alphabet: .standard) else {
                throw AppStoreServerAPIError.argument("\(endpoint.name): image is not standard base64", endpoint)
            }
            request = .uploadImage(imageIdentifier: try uuid("imageIdentifier"), image: image,
                                   imageSize: try c.decodeIfPresent(ImageSize.self, forKey: ParameterKey("imageSize")))
        case .deleteImage: request = .deleteImage(imageIdentifier: try uuid("imageIdentifier"))
        case .getImageList: request = .getImageList
        case .uploadMessage:
            request = .uploadMessage(messageIdentifier: try uuid("messageIdentifier"),
                                     uploadMessageRequestBody: try body(UploadMessageRequestBody.self))
        case .deleteMessage: request = .deleteMessage(messageIdentifier: try uuid("messageIdentifier"))
        case .getMessageList: request = .getMessageList
        case .configureDefaultMessage:
            request = .configureDefaultMessage(productId: try s("productId"), locale: try s("locale"),
                                               defaultConfigurationRequest: try body(DefaultConfigurationRequest.self))
        case .deleteDefaultMessage: request = .deleteDefaultMessage(productId: try s("productId"), locale: try s("locale"))
        case .getDefaultMessage: request = .getDefaultMessage(productId: try s("productId"), locale: try s("locale"))
        case .configureRealtimeURL: request = .configureRealtimeURL(realtimeUrlRequest: try body(RealtimeUrlRequest.self))
        case .deleteRealtimeURL: request = .deleteRealtimeURL
        case .getRealtimeURL: request = .getRealtimeURL
        case .initiatePerformanceTest: request = .initiatePerformanceTest(performanceTestRequest: try body(PerformanceTestRequest.self))
        case .getPerformanceTestResults: request = .getPerformanceTestResults(requestId: try s("requestId"))
        case .cancelSubscription:
            request = .cancelSubscription(transactionId: try s("transactionId"), request: try body(AdvancedCommerceSubscriptionCancelRequest.self))
        case .changeSubscriptionMetadata:
            request = .changeSubscriptionMetadata(transactionId: try s("transactionId"),
                                                  request: try body(AdvancedCommerceSubscriptionChangeMetadataRequest.self))
        case .changeSubscriptionPrice:
            request = .changeSubscriptionPrice(transactionId: try s("transactionId"),
                                               request: try body(AdvancedCommerceSubscriptionPriceChangeRequest.self))
        case .migrateSubscription:
            request = .migrateSubscription(transactionId: try s("transactionId"), request: try body(AdvancedCommerceSubscriptionMigrateRequest.self))
        case .revokeSubscription:
            request = .revokeSubscription(transactionId: try s("transactionId"), request: try body(AdvancedCommerceSubscriptionRevokeRequest.self))
        case .requestTransactionRefund:
            request = .requestTransactionRefund(transactionId: try s("transactionId"), request: try body(AdvancedCommerceRequestRefundRequest.self))
        }
    }
}
