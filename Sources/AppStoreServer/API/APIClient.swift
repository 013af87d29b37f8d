import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// How an API client talks to Apple: timeout, retries, and an optional base URL (e.g. a local test server).
public struct AppStoreServerAPIConfiguration: Hashable, Sendable {
    /// The whole exchange of one attempt; Apple's libraries use 30 s.
    public var timeoutMilliseconds: UInt32
    public var retryPolicy: APIRetryPolicy
    /// Replaces the environment's base URL when set.
    public var baseURL: String?

    public init(timeoutMilliseconds: UInt32 = AppStoreServerAPIRequestBuilder.defaultTimeoutMilliseconds,
                retryPolicy: APIRetryPolicy = .none, baseURL: String? = nil) {
        self.timeoutMilliseconds = timeoutMilliseconds
        self.retryPolicy = retryPolicy
        self.baseURL = baseURL
    }
}

/// Sends built requests through a transport, retrying per the policy. Shared by the async client and the C ABI.
public struct AppStoreServerAPICaller: Sendable {
    public let builder: AppStoreServerAPIRequestBuilder
    public let retryPolicy: APIRetryPolicy

    public init(builder: AppStoreServerAPIRequestBuilder, retryPolicy: APIRetryPolicy) {
        self.builder = builder
        self.retryPolicy = retryPolicy
    }

    /// The outcome of one attempt: a success answer, or the error to report or retry.
    private func classify(_ request: AppStoreServerAPIRequest, _ result: Result<HTTPResponse, TransportError>) -> Result<HTTPResponse, AppStoreServerAPIError> {
        switch result {
        case .failure(let t):
            return .failure(AppStoreServerAPIError(kind: .transport(t.kind), endpoint: request.endpoint,
                                                   message: "\(request.endpoint.name): \(t.description)"))
        case .success(let response):
            if (200...299).contains(response.status) { return .success(response) }
            return .failure(AppStoreServerAPIResponseDecoder.error(endpoint: request.endpoint, response: response))
        }
    }

    /// Blocking: builds (with a fresh token per attempt), sends, retries; returns the 2xx answer.
    public func send(_ request: AppStoreServerAPIRequest, transport: any BlockingHTTPTransport) throws(AppStoreServerAPIError) -> HTTPResponse {
        var retry = 0
        while true {
            let http = try builder.build(request)
            let result: Result<HTTPResponse, TransportError>
            do throws(TransportError) { result = .success(try transport.send(http)) } catch { result = .failure(error) }
            switch classify(request, result) {
            case .success(let r): return r
            case .failure(let e):
                retry += 1
                guard let delay = retryPolicy.delayMilliseconds(beforeRetry: retry, after: e) else { throw e }
                Self.sleepBlocking(milliseconds: delay)
            }
        }
    }

    /// Async: as `send(_:transport:)` with an async transport; waits with `Task.sleep` (cancellation ends the wait
    /// and returns the last error).
    public func send(_ request: AppStoreServerAPIRequest, transport: any HTTPTransport) async throws(AppStoreServerAPIError) -> HTTPResponse {
        var retry = 0
        while true {
            let http = try builder.build(request)
            let result: Result<HTTPResponse, TransportError>
            do throws(TransportError) { result = .success(try await transport.send(http)) } catch { result = .failure(error) }
            switch classify(request, result) {
            case .success(let r): return r
            case .failure(let e):
                retry += 1
                guard let delay = retryPolicy.delayMilliseconds(beforeRetry: retry, after: e) else { throw e }
                do { try await Task.sleep(nanoseconds: delay * 1_000_000) } catch { throw e }
            }
        }
    }

    static func sleepBlocking(milliseconds: UInt64) {
        var ts = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        var rest = timespec()
        while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
    }
}

/// The App Store Server API client (Apple's `AppStoreServerAPIClient` method names), async over a pluggable
/// transport. Failures throw `AppStoreServerAPIError` (Apple's Swift library returns `APIResult` instead).
/// Immutable and thread-safe; make one per key and environment and share it.
///
/// The default transport (AsyncHTTPClient) is in the separate product `AppStoreServerHTTP`, which also adds an
/// initializer without a transport argument.
public final class AppStoreServerAPIClient: Sendable {
    public let caller: AppStoreServerAPICaller
    public let transport: any HTTPTransport

    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                transport: any HTTPTransport, configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        let builder = try AppStoreServerAPIRequestBuilder(signingKey: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId,
                                                          environment: environment, baseURL: configuration.baseURL,
                                                          timeoutMilliseconds: configuration.timeoutMilliseconds)
        self.caller = AppStoreServerAPICaller(builder: builder, retryPolicy: configuration.retryPolicy)
        self.transport = transport
    }

    /// Apple's initializer shape: the `.p8` PEM text (parsed here; prefer sharing one `SigningKey`).
    public convenience init(signingKey: String, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                            transport: any HTTPTransport, configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        let key: SigningKey
        do throws(SigningKeyError) { key = try SigningKey(pem: signingKey) } catch {
            throw .configuration("signing key: \(error.message)")
        }
        try self.init(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId, environment: environment,
                      transport: transport, configuration: configuration)
    }

    /// Sends any endpoint call and returns the 2xx answer (retrying per the policy).
    public func send(_ request: AppStoreServerAPIRequest) async throws(AppStoreServerAPIError) -> HTTPResponse {
        try await caller.send(request, transport: transport)
    }

    func call<T: Decodable>(_ request: AppStoreServerAPIRequest, _ type: T.Type) async throws(AppStoreServerAPIError) -> T {
        let response = try await send(request)
        return try AppStoreServerAPIResponseDecoder.decodeBody(T.self, endpoint: request.endpoint, response: response)
    }

    func callVoid(_ request: AppStoreServerAPIRequest) async throws(AppStoreServerAPIError) {
        _ = try await send(request)
    }

    // MARK: transactions and subscriptions

    public func getTransactionInfo(transactionId: String) async throws(AppStoreServerAPIError) -> TransactionInfoResponse {
        try await call(.getTransactionInfo(transactionId: transactionId), TransactionInfoResponse.self)
    }

    /// Get Transaction History (v2 unless `version` says otherwise). Pass the previous page's `revision` for the next
    /// page, or use `getAllTransactionHistory`.
    public func getTransactionHistory(anyTransactionId: String, revision: String?, transactionHistoryRequest: TransactionHistoryRequest,
                                      version: GetTransactionHistoryVersion) async throws(AppStoreServerAPIError) -> HistoryResponse {
        try await call(.getTransactionHistory(anyTransactionId: anyTransactionId, revision: revision,
                                              transactionHistoryRequest: transactionHistoryRequest, version: version),
                       HistoryResponse.self)
    }

    /// Apple's deprecated overload: version 1.
    @available(*, deprecated, message: "Apple deprecated version 1; pass version: .v2")
    public func getTransactionHistory(anyTransactionId: String, revision: String?,
                                      transactionHistoryRequest: TransactionHistoryRequest) async throws(AppStoreServerAPIError) -> HistoryResponse {
        try await getTransactionHistory(anyTransactionId: anyTransactionId, revision: revision,
                                        transactionHistoryRequest: transactionHistoryRequest, version: .v1)
    }

    public func getAllSubscriptionStatuses(anyTransactionId: String, status: [Status]? = nil) async throws(AppStoreServerAPIError) -> StatusResponse {
        try await call(.getAllSubscriptionStatuses(anyTransactionId: anyTransactionId, status: status), StatusResponse.self)
    }

    public func getRefundHistory(anyTransactionId: String, revision: String?) async throws(AppStoreServerAPIError) -> RefundHistoryResponse {
        try await call(.getRefundHistory(anyTransactionId: anyTransactionId, revision: revision), RefundHistoryResponse.self)
    }

    public func lookUpOrderId(orderId: String) async throws(AppStoreServerAPIError) -> OrderLookupResponse {
        try await call(.lookUpOrderId(orderId: orderId), OrderLookupResponse.self)
    }

    public func getAppTransactionInfo(anyTransactionId: String) async throws(AppStoreServerAPIError) -> AppTransactionInfoResponse {
        try await call(.getAppTransactionInfo(anyTransactionId: anyTransactionId), AppTransactionInfoResponse.self)
    }

    public func finishTransaction(transactionId: String) async throws(AppStoreServerAPIError) {
        try await callVoid(.finishTransaction(transactionId: transactionId))
    }

    /// Send Consumption Information V1 (deprecated by Apple); `appAccountToken` is always sent, "" when nil.
    public func sendConsumptionData(transactionId: String, consumptionRequest: ConsumptionRequestV1) async throws(AppStoreServerAPIError) {
        try await callVoid(.sendConsumptionData(transactionId: transactionId, consumptionRequest: consumptionRequest))
    }

    public func sendConsumptionInformation(transactionId: String, consumptionRequest: ConsumptionRequest) async throws(AppStoreServerAPIError) {
        try await callVoid(.sendConsumptionInformation(transactionId: transactionId, consumptionRequest: consumptionRequest))
    }

    public func setAppAccountToken(originalTransactionId: String,
                                   updateAppAccountTokenRequest: UpdateAppAccountTokenRequest) async throws(AppStoreServerAPIError) {
        try await callVoid(.setAppAccountToken(originalTransactionId: originalTransactionId,
                                               updateAppAccountTokenRequest: updateAppAccountTokenRequest))
    }

    public func extendSubscriptionRenewalDate(originalTransactionId: String, extendRenewalDateRequest: ExtendRenewalDateRequest)
        async throws(AppStoreServerAPIError) -> ExtendRenewalDateResponse {
        try await call(.extendSubscriptionRenewalDate(originalTransactionId: originalTransactionId,
                                                      extendRenewalDateRequest: extendRenewalDateRequest), ExtendRenewalDateResponse.self)
    }

    public func extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: MassExtendRenewalDateRequest)
        async throws(AppStoreServerAPIError) -> MassExtendRenewalDateResponse {
        try await call(.extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: massExtendRenewalDateRequest),
                       MassExtendRenewalDateResponse.self)
    }

    public func getStatusOfSubscriptionRenewalDateExtensions(requestIdentifier: String, productId: String)
        async throws(AppStoreServerAPIError) -> MassExtendRenewalDateStatusResponse {
        try await call(.getStatusOfSubscriptionRenewalDateExtensions(requestIdentifier: requestIdentifier, productId: productId),
                       MassExtendRenewalDateStatusResponse.self)
    }

    // MARK: notifications

    public func requestTestNotification() async throws(AppStoreServerAPIError) -> SendTestNotificationResponse {
        try await call(.requestTestNotification, SendTestNotificationResponse.self)
    }

    public func getTestNotificationStatus(testNotificationToken: String) async throws(AppStoreServerAPIError) -> CheckTestNotificationResponse {
        try await call(.getTestNotificationStatus(testNotificationToken: testNotificationToken), CheckTestNotificationResponse.self)
    }

    public func getNotificationHistory(paginationToken: String?, notificationHistoryRequest: NotificationHistoryRequest)
        async throws(AppStoreServerAPIError) -> NotificationHistoryResponse {
        try await call(.getNotificationHistory(paginationToken: paginationToken, notificationHistoryRequest: notificationHistoryRequest),
                       NotificationHistoryResponse.self)
    }

    // MARK: Retention Messaging

    public func uploadImage(imageIdentifier: UUID, image: [UInt8], imageSize: ImageSize? = nil) async throws(AppStoreServerAPIError) {
        try await callVoid(.uploadImage(imageIdentifier: imageIdentifier, image: image, imageSize: imageSize))
    }

    public func deleteImage(imageIdentifier: UUID) async throws(AppStoreServerAPIError) {
        try await callVoid(.deleteImage(imageIdentifier: imageIdentifier))
    }

    public func getImageList() async throws(AppStoreServerAPIError) -> GetImageListResponse {
        try await call(.getImageList, GetImageListResponse.self)
    }

    public func uploadMessage(messageIdentifier: UUID, uploadMessageRequestBody: UploadMessageRequestBody) async throws(AppStoreServerAPIError) {
        try await callVoid(.uploadMessage(messageIdentifier: messageIdentifier, uploadMessageRequestBody: uploadMessageRequestBody))
    }

    public func deleteMessage(messageIdentifier: UUID) async throws(AppStoreServerAPIError) {
        try await callVoid(.deleteMessage(messageIdentifier: messageIdentifier))
    }

    public func getMessageList() async throws(AppStoreServerAPIError) -> GetMessageListResponse {
        try await call(.getMessageList, GetMessageListResponse.self)
    }

    public func configureDefaultMessage(productId: String, locale: String,
                                        defaultConfigurationRequest: DefaultConfigurationRequest) async throws(AppStoreServerAPIError) {
        try await callVoid(.configureDefaultMessage(productId: productId, locale: locale,
                                                    defaultConfigurationRequest: defaultConfigurationRequest))
    }

    public func deleteDefaultMessage(productId: String, locale: String) async throws(AppStoreServerAPIError) {
        try await callVoid(.deleteDefaultMessage(productId: productId, locale: locale))
    }

    public func getDefaultMessage(productId: String, locale: String) async throws(AppStoreServerAPIError) -> DefaultConfigurationResponse {
        try await call(.getDefaultMessage(productId: productId, locale: locale), DefaultConfigurationResponse.self)
    }

    public func configureRealtimeURL(realtimeUrlRequest: RealtimeUrlRequest) async throws(AppStoreServerAPIError) {
        try await callVoid(.configureRealtimeURL(realtimeUrlRequest: realtimeUrlRequest))
    }

    public func deleteRealtimeURL() async throws(AppStoreServerAPIError) {
        try await callVoid(.deleteRealtimeURL)
    }

    public func getRealtimeURL() async throws(AppStoreServerAPIError) -> RealtimeUrlResponse {
        try await call(.getRealtimeURL, RealtimeUrlResponse.self)
    }

    public func initiatePerformanceTest(performanceTestRequest: PerformanceTestRequest) async throws(AppStoreServerAPIError) -> PerformanceTestResponse {
        try await call(.initiatePerformanceTest(performanceTestRequest: performanceTestRequest), PerformanceTestResponse.self)
    }

    public func getPerformanceTestResults(requestId: String) async throws(AppStoreServerAPIError) -> PerformanceTestResultResponse {
        try await call(.getPerformanceTestResults(requestId: requestId), PerformanceTestResultResponse.self)
    }

    // MARK: Advanced Commerce API

    public func cancelSubscription(transactionId: String, request: AdvancedCommerceSubscriptionCancelRequest)
        async throws(AppStoreServerAPIError) -> AdvancedCommerceSubscriptionCancelResponse {
        try await call(.cancelSubscription(transactionId: transactionId, request: request), AdvancedCommerceSubscriptionCancelResponse.self)
    }

    public func changeSubscriptionMetadata(transactionId: String, request: AdvancedCommerceSubscriptionChangeMetadataRequest)
        async throws(AppStoreServerAPIError) -> AdvancedCommerceSubscriptionChangeMetadataResponse {
        try await call(.changeSubscriptionMetadata(transactionId: transactionId, request: request),
                       AdvancedCommerceSubscriptionChangeMetadataResponse.self)
    }

    public func changeSubscriptionPrice(transactionId: String, request: AdvancedCommerceSubscriptionPriceChangeRequest)
        async throws(AppStoreServerAPIError) -> AdvancedCommerceSubscriptionPriceChangeResponse {
        try await call(.changeSubscriptionPrice(transactionId: transactionId, request: request),
                       AdvancedCommerceSubscriptionPriceChangeResponse.self)
    }

    public func migrateSubscription(transactionId: String, request: AdvancedCommerceSubscriptionMigrateRequest)
        async throws(AppStoreServerAPIError) -> AdvancedCommerceSubscriptionMigrateResponse {
        try await call(.migrateSubscription(transactionId: transactionId, request: request), AdvancedCommerceSubscriptionMigrateResponse.self)
    }

    public func revokeSubscription(transactionId: String, request: AdvancedCommerceSubscriptionRevokeRequest)
        async throws(AppStoreServerAPIError) -> AdvancedCommerceSubscriptionRevokeResponse {
        try await call(.revokeSubscription(transactionId: transactionId, request: request), AdvancedCommerceSubscriptionRevokeResponse.self)
    }

    public func requestTransactionRefund(transactionId: String, request: AdvancedCommerceRequestRefundRequest)
        async throws(AppStoreServerAPIError) -> AdvancedCommerceRequestRefundResponse {
        try await call(.requestTransactionRefund(transactionId: transactionId, request: request), AdvancedCommerceRequestRefundResponse.self)
    }
}
