import FoundationEssentials

/// Following pages to the end: Get Transaction History and Get Refund History (`revision` / `hasMore`) and Get
/// Notification History (`paginationToken` / `hasMore`). Sans-I/O: `nextPage` gives the request of the next page.
public enum AppStoreServerAPIPagination {
    /// At most this many pages are followed, so a server that never stops cannot loop a client forever.
    public static let maxPages = 100_000

    public static func isPaginated(_ endpoint: AppStoreServerAPIEndpoint) -> Bool {
        switch endpoint {
        case .getTransactionHistory, .getTransactionHistoryV1, .getRefundHistory, .getNotificationHistory: true
        default: false
        }
    }

    /// The request of the page after `response` (already checked to decode), or nil when it was the last one.
    /// Throws when the server says there is more but gives no new token.
    public static func nextPage(after request: AppStoreServerAPIRequest, response: HTTPResponse) throws(AppStoreServerAPIError) -> AppStoreServerAPIRequest? {
        let endpoint = request.endpoint
        func stalled(_ token: String?) -> AppStoreServerAPIError {
            AppStoreServerAPIError(kind: .undecodableResponse, endpoint: endpoint,
                                   message: "\(endpoint.name): hasMore is true but the page gives \(token == nil ? "no" : "the same") continuation token",
                                   httpStatusCode: response.status)
        }
        switch request {
        case .getTransactionHistory(let tid, let revision, let filters, let version):
            let page = try AppStoreServerAPIResponseDecoder.decodeBody(HistoryResponse.self, endpoint: endpoint, response: response)
            guard page.hasMore == true else { return nil }
            guard let next = page.revision, next != revision else { throw stalled(page.revision) }
            return .getTransactionHistory(anyTransactionId: tid, revision: next, transactionHistoryRequest: filters, version: version)
        case .getRefundHistory(let tid, let revision):
            let page = try AppStoreServerAPIResponseDecoder.decodeBody(RefundHistoryResponse.self, endpoint: endpoint, response: response)
            guard page.hasMore == true else { return nil }
            guard let next = page.revision, next != revision else { throw stalled(page.revision) }
            return .getRefundHistory(anyTransactionId: tid, revision: next)
        case .getNotificationHistory(let token, let body):
            let page = try AppStoreServerAPIResponseDecoder.decodeBody(NotificationHistoryResponse.self, endpoint: endpoint, response: response)
            guard page.hasMore == true else { return nil }
            guard let next = page.paginationToken, next != token else { throw stalled(page.paginationToken) }
            return .getNotificationHistory(paginationToken: next, notificationHistoryRequest: body)
        default:
            throw .argument("\(endpoint.name) is not paginated", endpoint)
        }
    }

    /// Blocking: every page's answer, in order (used by the C ABI).
    public static func allPages(_ request: AppStoreServerAPIRequest, caller: AppStoreServerAPICaller,
                                transport: any BlockingHTTPTransport) throws(AppStoreServerAPIError) -> [HTTPResponse] {
        var pages: [HTTPResponse] = []
        var seen = Set<AppStoreServerAPIRequest>()
        var next: AppStoreServerAPIRequest? = request
        while let current = next {
            guard pages.count < maxPages else { throw .argument("\(request.endpoint.name): more than \(maxPages) pages", request.endpoint) }
            guard seen.insert(current).inserted else { throw cycle(current) }
            let response = try caller.send(current, transport: transport)
            next = try nextPage(after: current, response: response)
            pages.append(response)
        }
        return pages
    }

    /// A continuation token the server already gave: following it would loop forever.
    static func cycle(_ request: AppStoreServerAPIRequest) -> AppStoreServerAPIError {
        AppStoreServerAPIError(kind: .undecodableResponse, endpoint: request.endpoint,
                               message: "\(request.endpoint.name): the server repeated an earlier continuation token (pagination cycle)")
    }
}

extension AppStoreServerAPIClient {
    func allPages<T: Decodable>(_ request: AppStoreServerAPIRequest, _ type: T.Type) async throws(AppStoreServerAPIError) -> [T] {
        var pages: [T] = []
        var seen = Set<AppStoreServerAPIRequest>()
        var next: AppStoreServerAPIRequest? = request
        while let current = next {
            guard pages.count < AppStoreServerAPIPagination.maxPages else {
                throw .argument("\(request.endpoint.name): more than \(AppStoreServerAPIPagination.maxPages) pages", request.endpoint)
            }
            guard seen.insert(current).inserted else { throw AppStoreServerAPIPagination.cycle(current) }
            let response = try await send(current)
            pages.append(try AppStoreServerAPIResponseDecoder.decodeBody(T.self, endpoint: current.endpoint, response: response))
            next = try AppStoreServerAPIPagination.nextPage(after: current, response: response)
        }
        return pages
    }

    /// Every page of Get Transaction History, following `revision` while `hasMore`.
    public func getAllTransactionHistory(anyTransactionId: String, transactionHistoryRequest: TransactionHistoryRequest = .init(),
                                         version: GetTransactionHistoryVersion = .v2,
                                         revision: String? = nil) async throws(AppStoreServerAPIError) -> [HistoryResponse] {
        try await allPages(.getTransactionHistory(anyTransactionId: anyTransactionId, revision: revision,
                                                  transactionHistoryRequest: transactionHistoryRequest, version: version),
                           HistoryResponse.self)
    }

    /// Every page of Get Refund History, following `revision` while `hasMore`.
    public func getAllRefundHistory(anyTransactionId: String, revision: String? = nil) async throws(AppStoreServerAPIError) -> [RefundHistoryResponse] {
        try await allPages(.getRefundHistory(anyTransactionId: anyTransactionId, revision: revision), RefundHistoryResponse.self)
    }

    /// Every page of Get Notification History, following `paginationToken` while `hasMore`.
    public func getAllNotificationHistory(notificationHistoryRequest: NotificationHistoryRequest,
                                          paginationToken: String? = nil) async throws(AppStoreServerAPIError) -> [NotificationHistoryResponse] {
        try await allPages(.getNotificationHistory(paginationToken: paginationToken, notificationHistoryRequest: notificationHistoryRequest),
                           NotificationHistoryResponse.self)
    }
}
