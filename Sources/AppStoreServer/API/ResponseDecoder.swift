import FoundationEssentials

/// Turns an HTTP answer into the endpoint's model or an `AppStoreServerAPIError`. Sans-I/O and thread-safe.
public enum AppStoreServerAPIResponseDecoder {
    /// Largest body accepted (Apple's answers are far smaller; history pages hold at most 20 transactions).
    public static let maxBodyBytes = HTTPLimits.apiResponseBytes

    /// The answer as JSON text for the C ABI and bindings: the body exactly as Apple sent it after checking that it
    /// decodes into the endpoint's model, or `{}` for endpoints without a response model.
    public static func json(endpoint: AppStoreServerAPIEndpoint, response: HTTPResponse) throws(AppStoreServerAPIError) -> [UInt8] {
        try checkStatus(endpoint: endpoint, response: response)
        guard let type = endpoint.responseJSONType else { return Array("{}".utf8) }
        _ = try decodeBody(type, endpoint: endpoint, response: response)  // opens the existential metatype
        return response.body
    }

    static func decodeBody<T: JSONDecodable>(_ type: T.Type, endpoint: AppStoreServerAPIEndpoint,
                                             response: HTTPResponse) throws(AppStoreServerAPIError) -> T {
        func fail(_ why: String) -> AppStoreServerAPIError {
            AppStoreServerAPIError(kind: .undecodableResponse, endpoint: endpoint,
                                   message: "\(endpoint.name): HTTP \(response.status) response does not decode as \(T.self): \(why)",
                                   httpStatusCode: response.status, headers: response.headers)
        }
        guard response.body.count <= maxBodyBytes else { throw fail("body larger than \(maxBodyBytes) bytes") }
        do throws(JSONDecodeError) {
            return try T(jsonText: response.body, strict: false)
        } catch {
            throw fail(error.description)
        }
    }

    /// Throws for any status outside 200...299.
    static func checkStatus(endpoint: AppStoreServerAPIEndpoint, response: HTTPResponse) throws(AppStoreServerAPIError) {
        guard !(200...299).contains(response.status) else { return }
        throw error(endpoint: endpoint, response: response)
    }

    /// The error an HTTP error answer carries: Apple's error payload when the body is one, else the bare status.
    public static func error(endpoint: AppStoreServerAPIEndpoint, response: HTTPResponse,
                             nowMilliseconds: Int64 = Timestamp.nowMilliseconds()) -> AppStoreServerAPIError {
        let after = response.header("Retry-After").flatMap { RetryAfter($0, nowMilliseconds: nowMilliseconds) }
        let retryAfter = after?.seconds(from: nowMilliseconds)
        if (300...399).contains(response.status) {
            // Apple's API never redirects: a 3xx comes from something else on the path, and following it would hand
            // the bearer token (and a POST body) to whatever host it names. Transports do not follow it; this says so.
            let location = response.header("Location").map { "to \"\(ServerText.clean($0, limit: 512))\"" } ?? "without a Location"
            return AppStoreServerAPIError(kind: .httpError, endpoint: endpoint,
                                          message: "\(endpoint.name): HTTP \(response.status) redirect \(location) refused: the App Store "
                                              + "Server API does not redirect (is the base URL right, or is a proxy answering?)",
                                          httpStatusCode: response.status, receivedAtMilliseconds: nowMilliseconds,
                                          headers: response.headers)
        }
        var payload = response.body.count <= maxBodyBytes ? try? ErrorPayload(jsonText: response.body, strict: false) : nil
        // Apple's message is text from the network: no terminal escapes or line breaks, and a bounded length.
        if let text = payload?.errorMessage { payload?.errorMessage = ServerText.clean(text, limit: ServerText.messageLimit) }
        let statusText = "HTTP \(response.status)"
        guard let payload, let code = payload.errorCode else {
            var message = "\(endpoint.name): \(statusText) without an App Store error payload"
            if response.status == 429 { message += " (rate limited)" }
            if let retryAfter { message += "; Retry-After \(retryAfter) s" }
            return AppStoreServerAPIError(kind: .httpError, endpoint: endpoint, message: message,
                                          httpStatusCode: response.status, errorMessage: payload?.errorMessage,
                                          retryAfter: after, receivedAtMilliseconds: nowMilliseconds, headers: response.headers)
        }
        let name = AppStoreServerAPIError.errorName(code, advancedCommerce: endpoint.isAdvancedCommerce)
        var message = "\(endpoint.name): \(statusText), error \(code) (\(name ?? "unknown error code"))"
        if let text = payload.errorMessage { message += ": \(text)" }
        if let retryAfter { message += "; Retry-After \(retryAfter) s" }
        return AppStoreServerAPIError(kind: .apiError, endpoint: endpoint, message: message, httpStatusCode: response.status,
                                      rawApiError: code, errorMessage: payload.errorMessage, retryAfter: after,
                                      receivedAtMilliseconds: nowMilliseconds, headers: response.headers)
    }
}
