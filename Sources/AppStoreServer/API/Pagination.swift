import FoundationEssentials

/// Following pages to the end: Get Transaction History and Get Refund History (`revision` / `hasMore`) and Get
/// Notification History (`paginationToken` / `hasMore`). Sans-I/O: `nextPage` gives the request of the next page.
public enum AppStoreServerAPIPagination {
    /// At most this many pages are followed, so a server that never stops cannot loop a client forever.
    public static let maxPages = 100_000

    /// Whether the endpoint answers in pages (`AppStoreServerAPIEndpoint.isPaginated`).
    public static func isPaginated(_ endpoint: AppStoreServerAPIEndpoint) -> Bool { endpoint.isPaginated }

    /// The continuation token of the next page (nextPage(after:response:) is generated from spec/endpoints.json):
    /// nil when `hasMore` is not true; an error when the server says there is more but gives no new token.
    static func continuation(hasMore: Bool?, token: String?, current: String?, request: AppStoreServerAPIRequest,
                             response: HTTPResponse) throws(AppStoreServerAPIError) -> String? {
        guard hasMore == true else { return nil }
        guard let token, token != current else {
            let endpoint = request.endpoint
            throw AppStoreServerAPIError(kind: .undecodableResponse, endpoint: endpoint,
                                         message: "\(endpoint.name): hasMore is true but the page gives \(token == nil ? "no" : "the same") continuation token",
                                         httpStatusCode: response.status)
        }
        return token
    }

    /// Blocking: every page's answer, in order, and the environment that answered (used by the C ABI). When the
    /// first page falls back to Sandbox, the later pages are asked there directly.
    public static func allPages(_ request: AppStoreServerAPIRequest, caller: AppStoreServerAPICaller,
                                transport: any BlockingHTTPTransport) throws(AppStoreServerAPIError) -> (pages: [HTTPResponse], environment: AppStoreEnvironment) {
        let call = AppStoreServerAPICall(caller: caller, request: request, checksBody: false)
        var pages = [try caller.drive(call, transport: transport).response]
        while call.hasNextPage { pages.append(try caller.drive(call, transport: transport).response) }
        return (pages, call.environment)
    }

    /// Every page's body as one JSON array, the pages exactly as sent (`appstore_api_client_call_all_pages`).
    public static func pagesJSON(_ pages: [HTTPResponse]) -> [UInt8] {
        var w = JSONWriter()
        w.beginArray()
        for page in pages { w.raw(page.body) }
        w.endArray()
        return w.bytes
    }

    /// A continuation token the server already gave: following it would loop forever.
    static func cycle(_ request: AppStoreServerAPIRequest) -> AppStoreServerAPIError {
        AppStoreServerAPIError(kind: .undecodableResponse, endpoint: request.endpoint,
                               message: "\(request.endpoint.name): the server repeated an earlier continuation token (pagination cycle)")
    }
}

extension AppStoreServerAPIClient {
    func allPages<T: JSONDecodable>(_ request: AppStoreServerAPIRequest, _ type: T.Type) async throws(AppStoreServerAPIError) -> [T] {
        let call = AppStoreServerAPICall(caller: caller, request: request, checksBody: false)
        var pages: [T] = []
        repeat {
            let answer = try await caller.drive(call, transport: transport)
            pages.append(try AppStoreServerAPIResponseDecoder.decodeBody(T.self, endpoint: call.request.endpoint, response: answer.response))
        } while call.hasNextPage
        return pages
    }
}
