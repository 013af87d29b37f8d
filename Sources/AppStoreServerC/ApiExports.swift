import AppStoreServer
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// App Store Server API at the C ABI: sans-I/O request builder and response decoder, plus calls through a
// host-supplied transport (appstore_transport) with the configured retry policy.

/// The object behind `appstore_api_client_options *` (a locked builder).
final class APIClientOptionsBox: Sendable {
    struct Values {
        var transport: CTransport?
        var timeoutMilliseconds: UInt32 = AppStoreServerAPIRequestBuilder.defaultTimeoutMilliseconds
        var retry: APIRetryPolicy = .none
        var baseURL: String?
        var sandboxFallback = false
        var sandboxBaseURL: String?
        var rateLimit: APIRateLimit?

        var configuration: AppStoreServerAPIConfiguration {
            AppStoreServerAPIConfiguration(timeoutMilliseconds: timeoutMilliseconds, retryPolicy: retry, baseURL: baseURL,
                                           sandboxFallback: sandboxFallback, sandboxBaseURL: sandboxBaseURL,
                                           rateLimit: rateLimit)
        }
    }
    let values = Locked(Values())
}

/// The object behind `appstore_api_client *`: immutable.
final class APIClientBox: Sendable {
    let caller: AppStoreServerAPICaller
    let transport: CTransport?
    init(caller: AppStoreServerAPICaller, transport: CTransport?) {
        self.caller = caller
        self.transport = transport
    }

    func requireTransport() throws(CFailure) -> CTransport {
        guard let transport else {
            throw CFailure(statusCode: .configurationError, reason: .noTransport,
                           message: "the client has no transport: set one with appstore_api_client_options_set_transport, "
                                    + "or use appstore_api_client_build_request / _decode_response with your own HTTP")
        }
        return transport
    }
}

/// The object behind `appstore_api_request *`: a built request with C strings for the getters.
final class APIRequestBox: @unchecked Sendable {
    // Immutable after init; the C strings are freed in deinit.
    let method: UnsafeMutablePointer<CChar>?
    let url: UnsafeMutablePointer<CChar>?
    let headerText: UnsafeMutablePointer<CChar>?
    let headerNames: [UnsafeMutablePointer<CChar>?]
    let headerValues: [UnsafeMutablePointer<CChar>?]
    let body: UnsafeMutablePointer<UInt8>?  // malloc'd copy; nil when empty
    let bodyCount: Int
    let timeout: UInt32
    /// What the request is for.
    let endpoint: AppStoreServerAPIEndpoint
    let environment: AppStoreEnvironment

    init(_ r: HTTPRequest, endpoint: AppStoreServerAPIEndpoint, environment: AppStoreEnvironment) throws(CFailure) {
        self.endpoint = endpoint
        self.environment = environment
        method = strdup(r.method)
        url = strdup(r.url)
        headerText = strdup(r.headers.map { "\($0.name): \($0.value)\r\n" }.joined())
        headerNames = r.headers.map { strdup($0.name) }
        headerValues = r.headers.map { strdup($0.value) }
        bodyCount = r.body.count
        if r.body.isEmpty {
            body = nil
        } else {
            body = malloc(r.body.count)?.assumingMemoryBound(to: UInt8.self)
            if let body { r.body.withUnsafeBufferPointer { src in if let b = src.baseAddress { memcpy(body, b, src.count) } } }
        }
        timeout = r.timeoutMilliseconds
        if method == nil || url == nil || headerText == nil || headerNames.contains(nil) || headerValues.contains(nil)
            || (bodyCount > 0 && body == nil) {
            throw .outOfMemory()
        }
    }

    deinit {
        free(method)
        free(url)
        free(headerText)
        free(body)
        headerNames.forEach { free($0) }
        headerValues.forEach { free($0) }
    }
}

nonisolated(unsafe) private let emptyBody: UnsafeMutablePointer<UInt8> = {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    p.initialize(to: 0)
    return p
}()
private let endpointNames = StaticCStrings(
    AppStoreServerAPIEndpoint.allCases.enumerated().map { (Int32($0.offset), $0.element.name) }, fallback: "")

/// Apple's base URLs by environment code, App Store Server API then Advanced Commerce (key: code, or code + 100).
private let baseURLs = StaticCStrings(
    [AppStoreEnvironment.production, .sandbox, .localTesting].flatMap { e -> [(Int32, String)] in
        [(cEnvironmentCode(e), (try? AppStoreServerAPIBaseURL.forEnvironment(e)) ?? ""),
         (cEnvironmentCode(e) + 100, AppStoreServerAPIBaseURL.advancedCommerce(e))]
    }, fallback: "")

@c(appstore_api_base_url)
public func appstoreApiBaseUrl(_ environment: Int32, _ advancedCommerce: Int32) -> UnsafePointer<CChar> {
    guard environment >= 1, environment <= 4, advancedCommerce == 0 || advancedCommerce == 1 else {
        return StaticCStrings.emptyString
    }
    return baseURLs.get(environment + (advancedCommerce == 1 ? 100 : 0))
}

func endpoint(_ p: UnsafePointer<CChar>?) throws(CFailure) -> AppStoreServerAPIEndpoint {
    let name = try utf8String(p, "endpoint")
    guard let e = AppStoreServerAPIEndpoint(name: name) else {
        throw CFailure(statusCode: .invalidArgument, reason: .unknownEndpoint,
                       message: "unknown endpoint \(QuotedText.quote(name)) (see APPSTORE_ENDPOINT_* in appstoreserver.h)")
    }
    return e
}

func request(_ e: AppStoreServerAPIEndpoint, _ params: UnsafePointer<CChar>?) throws -> AppStoreServerAPIRequest {
    let json = try optionalUTF8String(params, "params_json").map { Array($0.utf8) } ?? []
    return try AppStoreServerAPIRequest(endpoint: e, parametersJSON: json)
}

// MARK: endpoints

@c(appstore_api_endpoint_count)
public func appstoreApiEndpointCount() -> UInt { UInt(AppStoreServerAPIEndpoint.allCases.count) }

@c(appstore_api_endpoint_name)
public func appstoreApiEndpointName(_ index: UInt) -> UnsafePointer<CChar> {
    guard index < UInt(AppStoreServerAPIEndpoint.allCases.count) else { return StaticCStrings.emptyString }
    return endpointNames.get(Int32(index))
}

// MARK: options

@c(appstore_api_client_options_new)
public func appstoreApiClientOptionsNew(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        try output(out, "options_out") { APIClientOptionsBox() }
    }
}

@c(appstore_api_client_options_free)
public func appstoreApiClientOptionsFree(_ options: OpaquePointer?) { release(options, APIClientOptionsBox.self) }

@c(appstore_api_client_options_set_transport)
public func appstoreApiClientOptionsSetTransport(_ options: OpaquePointer?, _ transport: OpaquePointer?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, APIClientOptionsBox.self, "options")
        let t = transport == nil ? nil : try handle(transport, CTransport.self, "transport")
        box.values.withLock { $0.transport = t }
    }
}

@c(appstore_api_client_options_set_timeout_ms)
public func appstoreApiClientOptionsSetTimeoutMs(_ options: OpaquePointer?, _ timeout: UInt32, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, APIClientOptionsBox.self, "options")
        guard timeout > 0 else { throw CFailure.argument("timeout_ms must be at least 1") }
        box.values.withLock { $0.timeoutMilliseconds = timeout }
    }
}

@c(appstore_api_client_options_set_retry)
public func appstoreApiClientOptionsSetRetry(_ options: OpaquePointer?, _ maxRetries: UInt32, _ initialBackoff: UInt32,
                                             _ maxBackoff: UInt32, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, APIClientOptionsBox.self, "options")
        guard maxRetries <= 100 else { throw CFailure.argument("max_retries must be at most 100, got \(maxRetries)") }
        guard maxBackoff >= initialBackoff else {
            throw CFailure.argument("max_backoff_ms (\(maxBackoff)) must be >= initial_backoff_ms (\(initialBackoff))")
        }
        box.values.withLock {
            $0.retry = APIRetryPolicy(maxRetries: Int(maxRetries), initialBackoffMilliseconds: initialBackoff,
                                      maxBackoffMilliseconds: maxBackoff)
        }
    }
}

@c(appstore_api_client_options_set_base_url)
public func appstoreApiClientOptionsSetBaseUrl(_ options: OpaquePointer?, _ baseURL: UnsafePointer<CChar>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, APIClientOptionsBox.self, "options")
        let url = try optionalUTF8String(baseURL, "base_url")
        box.values.withLock { $0.baseURL = url }
    }
}

@c(appstore_api_client_options_set_sandbox_fallback)
public func appstoreApiClientOptionsSetSandboxFallback(_ options: OpaquePointer?, _ enabled: Int32,
                                                       _ sandboxBaseURL: UnsafePointer<CChar>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, APIClientOptionsBox.self, "options")
        guard enabled == 0 || enabled == 1 else { throw CFailure.argument("enabled must be 0 or 1, got \(enabled)") }
        let url = try optionalUTF8String(sandboxBaseURL, "sandbox_base_url")
        guard enabled == 1 || url == nil else { throw CFailure.argument("sandbox_base_url is for the fallback; pass NULL with enabled 0") }
        box.values.withLock {
            $0.sandboxFallback = enabled == 1
            $0.sandboxBaseURL = url
        }
    }
}

@c(appstore_api_client_options_set_rate_limit)
public func appstoreApiClientOptionsSetRateLimit(_ options: OpaquePointer?, _ enabled: Int32, _ maxWaitMs: UInt32,
                                                 _ sharePercent: UInt32, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, APIClientOptionsBox.self, "options")
        guard enabled == 0 || enabled == 1 else { throw CFailure.argument("enabled must be 0 or 1, got \(enabled)") }
        guard (1...100).contains(sharePercent) else { throw CFailure.argument("share_percent must be 1 to 100, got \(sharePercent)") }
        box.values.withLock {
            $0.rateLimit = enabled == 1 ? APIRateLimit(maxWaitMilliseconds: maxWaitMs, share: Double(sharePercent) / 100) : nil
        }
    }
}

// MARK: client

@c(appstore_api_client_new)
public func appstoreApiClientNew(_ key: OpaquePointer?, _ environment: Int32, _ options: OpaquePointer?,
                                 _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let k = try handle(key, SigningKeyBox.self, "key")
        guard let out else { throw CFailure.argument("client_out is NULL") }
        let env = try cEnvironment(environment)
        let values = options == nil ? APIClientOptionsBox.Values()
            : try handle(options, APIClientOptionsBox.self, "options").values.withLock { $0 }
        let issuer = try k.requireIssuer()
        let caller = try AppStoreServerAPICaller(signingKey: k.key, keyId: k.keyId, issuerId: issuer, bundleId: k.bundleId,
                                                 environment: env, configuration: values.configuration)
        out.pointee = retained(APIClientBox(caller: caller, transport: values.transport))
    }
}

@c(appstore_api_client_free)
public func appstoreApiClientFree(_ client: OpaquePointer?) { release(client, APIClientBox.self) }

@c(appstore_api_client_build_request)
public func appstoreApiClientBuildRequest(_ client: OpaquePointer?, _ endpointName: UnsafePointer<CChar>?,
                                          _ params: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                          _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(client, APIClientBox.self, "client")
        guard let out else { throw CFailure.argument("request_out is NULL") }
        let r = try request(try endpoint(endpointName), params)
        let http = try box.caller.builder.build(r)
        out.pointee = retained(try APIRequestBox(http, endpoint: r.endpoint, environment: box.caller.builder.environment))
    }
}

/// Parses "Name: value\r\n" lines (a bare "\n" also ends a line); lines without a colon are ignored.
func parseHeaderLines(_ text: UnsafeRawBufferPointer) -> [HTTPHeader] {
    var headers: [HTTPHeader] = []
    for line in text.split(separator: UInt8(ascii: "\n")) {
        var bytes = Array(line)
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { continue }
        let name = String(decoding: bytes[..<colon], as: UTF8.self)
        var value = bytes[(colon + 1)...]
        while let f = value.first, f == UInt8(ascii: " ") || f == UInt8(ascii: "\t") { value = value.dropFirst() }
        while let l = value.last, l == UInt8(ascii: " ") || l == UInt8(ascii: "\t") { value = value.dropLast() }
        headers.append(HTTPHeader(name, String(decoding: value, as: UTF8.self)))
    }
    return headers
}

@c(appstore_api_client_decode_response)
public func appstoreApiClientDecodeResponse(_ client: OpaquePointer?, _ endpointName: UnsafePointer<CChar>?, _ status: Int32,
                                            _ headers: UnsafePointer<CChar>?, _ headersLen: UInt, _ body: UnsafePointer<UInt8>?,
                                            _ bodyLen: UInt, _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        _ = try handle(client, APIClientBox.self, "client")
        guard let jsonOut else { throw CFailure.argument("json_out is NULL") }
        let e = try endpoint(endpointName)
        guard (100...599).contains(status) else { throw CFailure.argument("http_status \(status) is not an HTTP status (100-599)") }
        let headerView = try bytes(headers.map(UnsafeRawPointer.init), headersLen, "headers")
        let bodyView = try bytes(body.map(UnsafeRawPointer.init), bodyLen, "body")
        let response = HTTPResponse(status: Int(status), headers: parseHeaderLines(headerView), body: [UInt8](bodyView))
        jsonOut.pointee = try mallocCString(try AppStoreServerAPIResponseDecoder.json(endpoint: e, response: response))
    }
}

@c(appstore_api_client_call)
public func appstoreApiClientCall(_ client: OpaquePointer?, _ endpointName: UnsafePointer<CChar>?, _ params: UnsafePointer<CChar>?,
                                  _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    appstoreApiClientCallExt(client, endpointName, params, jsonOut, nil, errOut)
}

@c(appstore_api_client_call_ext)
public func appstoreApiClientCallExt(_ client: OpaquePointer?, _ endpointName: UnsafePointer<CChar>?,
                                     _ params: UnsafePointer<CChar>?, _ jsonOut: StringOut?,
                                     _ environmentOut: UnsafeMutablePointer<Int32>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(client, APIClientBox.self, "client")
        let e = try endpoint(endpointName)
        let r = try request(e, params)
        let transport = try box.requireTransport()
        let answer = try box.caller.answer(r, transport: transport)
        let json = try AppStoreServerAPIResponseDecoder.json(endpoint: e, response: answer.response)
        try outputString(jsonOut, json)
        environmentOut?.pointee = cEnvironmentCode(answer.environment)
    }
}

@c(appstore_api_client_call_all_pages)
public func appstoreApiClientCallAllPages(_ client: OpaquePointer?, _ endpointName: UnsafePointer<CChar>?,
                                          _ params: UnsafePointer<CChar>?, _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(client, APIClientBox.self, "client")
        guard let jsonOut else { throw CFailure.argument("json_out is NULL") }
        let e = try endpoint(endpointName)
        guard AppStoreServerAPIPagination.isPaginated(e) else {
            let paginated = AppStoreServerAPIEndpoint.allCases.filter(\.isPaginated).map(\.name).joined(separator: ", ")
            throw CFailure(statusCode: .invalidArgument, reason: .invalidParameters,
                           message: "\(e.name) is not paginated (\(paginated) are)")
        }
        let r = try request(e, params)
        let transport = try box.requireTransport()
        let pages = try AppStoreServerAPIPagination.allPages(r, caller: box.caller, transport: transport).pages
        jsonOut.pointee = try mallocCString(AppStoreServerAPIPagination.pagesJSON(pages))
    }
}

// MARK: request getters

private func requestBox(_ p: OpaquePointer?) -> APIRequestBox? { try? handle(p, APIRequestBox.self, "request") }

@c(appstore_api_request_method)
public func appstoreApiRequestMethod(_ request: OpaquePointer?) -> UnsafePointer<CChar> {
    requestBox(request)?.method.map { UnsafePointer($0) } ?? StaticCStrings.emptyString
}

@c(appstore_api_request_url)
public func appstoreApiRequestUrl(_ request: OpaquePointer?) -> UnsafePointer<CChar> {
    requestBox(request)?.url.map { UnsafePointer($0) } ?? StaticCStrings.emptyString
}

@c(appstore_api_request_headers)
public func appstoreApiRequestHeaders(_ request: OpaquePointer?) -> UnsafePointer<CChar> {
    requestBox(request)?.headerText.map { UnsafePointer($0) } ?? StaticCStrings.emptyString
}

@c(appstore_api_request_header_count)
public func appstoreApiRequestHeaderCount(_ request: OpaquePointer?) -> UInt { UInt(requestBox(request)?.headerNames.count ?? 0) }

@c(appstore_api_request_header_name)
public func appstoreApiRequestHeaderName(_ request: OpaquePointer?, _ index: UInt) -> UnsafePointer<CChar> {
    guard let box = requestBox(request), index < UInt(box.headerNames.count), let p = box.headerNames[Int(index)] else {
        return StaticCStrings.emptyString
    }
    return UnsafePointer(p)
}

@c(appstore_api_request_header_value)
public func appstoreApiRequestHeaderValue(_ request: OpaquePointer?, _ index: UInt) -> UnsafePointer<CChar> {
    guard let box = requestBox(request), index < UInt(box.headerValues.count), let p = box.headerValues[Int(index)] else {
        return StaticCStrings.emptyString
    }
    return UnsafePointer(p)
}

@c(appstore_api_request_body)
public func appstoreApiRequestBody(_ request: OpaquePointer?, _ lenOut: UnsafeMutablePointer<UInt>?) -> UnsafePointer<UInt8> {
    guard let box = requestBox(request), let body = box.body else {
        lenOut?.pointee = 0
        return UnsafePointer(emptyBody)
    }
    lenOut?.pointee = UInt(box.bodyCount)
    return UnsafePointer(body)
}

@c(appstore_api_request_timeout_ms)
public func appstoreApiRequestTimeoutMs(_ request: OpaquePointer?) -> UInt32 { requestBox(request)?.timeout ?? 0 }

@c(appstore_api_request_free)
public func appstoreApiRequestFree(_ request: OpaquePointer?) { release(request, APIRequestBox.self) }
