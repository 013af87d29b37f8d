import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

// The call driver at the C ABI (appstore_api_call_*): AppStoreServerAPICall behind a locked handle. The host loop of
// every binding runs over these functions.

/// The object behind `appstore_api_call *`.
final class APICallBox: Sendable {
    struct State {
        let call: AppStoreServerAPICall
        /// The request of the last SEND, until its outcome is received.
        var request: APIRequestBox?
        /// The answer of the last DONE.
        var answer: APIAnswer?
    }
    /// Keeps the client (and its transport and key) alive as long as the call.
    let client: APIClientBox
    let state: Locked<State>

    init(client: APIClientBox, call: AppStoreServerAPICall) {
        self.client = client
        self.state = Locked(State(call: call))
    }
}

/// 0 = the system clock.
private func clock(_ nowMs: Int64) -> Int64 { nowMs == 0 ? Timestamp.nowMilliseconds() : nowMs }

@c(appstore_api_call_new)
public func appstoreApiCallNew(_ client: OpaquePointer?, _ endpointName: UnsafePointer<CChar>?, _ params: UnsafePointer<CChar>?,
                               _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(client, APIClientBox.self, "client")
        guard let out else { throw CFailure.argument("call_out is NULL") }
        let r = try request(try endpoint(endpointName), params)
        out.pointee = retained(APICallBox(client: box, call: AppStoreServerAPICall(caller: box.caller, request: r)))
    }
}

@c(appstore_api_call_free)
public func appstoreApiCallFree(_ call: OpaquePointer?) { release(call, APICallBox.self) }

@c(appstore_api_call_next)
public func appstoreApiCallNext(_ call: OpaquePointer?, _ nowMs: Int64, _ actionOut: UnsafeMutablePointer<Int32>?,
                                _ waitOut: UnsafeMutablePointer<Int64>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(call, APICallBox.self, "call")
        guard let actionOut else { throw CFailure.argument("action_out is NULL") }
        let (action, wait) = try box.state.withLock { s throws -> (Int32, Int64) in
            switch try s.call.next(nowMilliseconds: clock(nowMs)) {
            case .send(let http):
                s.request = try APIRequestBox(http, endpoint: s.call.request.endpoint, environment: s.call.environment)
                s.answer = nil
                return (1, 0)
            case .wait(let ms):
                s.answer = nil
                return (2, Int64(clamping: ms))
            case .done(let answer):
                s.answer = answer
                return (3, 0)
            }
        }
        actionOut.pointee = action
        waitOut?.pointee = wait
    }
}

@c(appstore_api_call_request)
public func appstoreApiCallRequest(_ call: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(call, APICallBox.self, "call")
        guard let out else { throw CFailure.argument("request_out is NULL") }
        guard let r = box.state.withLock({ $0.call.awaitsResponse ? $0.request : nil }) else {
            throw CFailure.argument("no request awaits sending (appstore_api_call_next did not return APPSTORE_API_ACTION_SEND)")
        }
        out.pointee = retained(r)
    }
}

@c(appstore_api_call_receive)
public func appstoreApiCallReceive(_ call: OpaquePointer?, _ status: Int32, _ headers: UnsafePointer<CChar>?, _ headersLen: UInt,
                                   _ body: UnsafePointer<UInt8>?, _ bodyLen: UInt, _ nowMs: Int64, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(call, APICallBox.self, "call")
        guard (100...599).contains(status) else { throw CFailure.argument("http_status \(status) is not an HTTP status (100-599)") }
        guard bodyLen <= UInt(HTTPLimits.apiResponseBytes) else {
            throw CFailure.argument("body_len \(bodyLen) is more than APPSTORE_LIMIT_API_RESPONSE_BYTES (\(HTTPLimits.apiResponseBytes))")
        }
        let headerView = try bytes(headers.map(UnsafeRawPointer.init), headersLen, "headers")
        let bodyView = try bytes(body.map(UnsafeRawPointer.init), bodyLen, "body")
        let response = HTTPResponse(status: Int(status), headers: parseHeaderLines(headerView), body: [UInt8](bodyView))
        let taken = box.state.withLock { s -> Bool in
            guard s.call.receive(response, nowMilliseconds: clock(nowMs)) else { return false }
            s.request = nil
            return true
        }
        guard taken else { throw CFailure.argument("no request awaits an answer (appstore_api_call_next did not return APPSTORE_API_ACTION_SEND)") }
    }
}

@c(appstore_api_call_receive_failure)
public func appstoreApiCallReceiveFailure(_ call: OpaquePointer?, _ result: Int32, _ message: UnsafePointer<CChar>?,
                                          _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(call, APICallBox.self, "call")
        guard let kind = TransportError.Kind(rawValue: result) else {
            throw CFailure.argument("result \(result) is not APPSTORE_TRANSPORT_RESULT_TIMEOUT, _UNREACHABLE or _FAILED (1-3)")
        }
        let text = try optionalUTF8String(message, "message").map { ServerText.clean($0, limit: ServerText.messageLimit) }
        let failure = TransportError(kind, text ?? "no answer")
        let taken = box.state.withLock { s -> Bool in
            guard s.call.receive(failure: failure) else { return false }
            s.request = nil
            return true
        }
        guard taken else { throw CFailure.argument("no request awaits an outcome (appstore_api_call_next did not return APPSTORE_API_ACTION_SEND)") }
    }
}

@c(appstore_api_call_answer)
public func appstoreApiCallAnswer(_ call: OpaquePointer?, _ jsonOut: StringOut?, _ environmentOut: UnsafeMutablePointer<Int32>?,
                                  _ headersOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(call, APICallBox.self, "call")
        let (answer, json) = box.state.withLock { ($0.answer, $0.call.answerJSON) }
        guard let answer, let json else {
            throw CFailure.argument("the call has no answer (appstore_api_call_next did not return APPSTORE_API_ACTION_DONE)")
        }
        let headerText = Array(answer.response.headers.map { "\($0.name): \($0.value)\r\n" }.joined().utf8)
        // Outputs only on success: allocate both strings before writing either.
        let j = jsonOut == nil ? nil : try mallocCString(json)
        let h: UnsafeMutablePointer<CChar>?
        do { h = headersOut == nil ? nil : try mallocCString(headerText) } catch {
            freeCString(j)
            throw error
        }
        jsonOut?.pointee = j
        headersOut?.pointee = h
        environmentOut?.pointee = cEnvironmentCode(answer.environment)
    }
}

@c(appstore_api_call_has_next_page)
public func appstoreApiCallHasNextPage(_ call: OpaquePointer?) -> Int32 {
    guard let box = try? handle(call, APICallBox.self, "call") else { return 0 }
    return box.state.withLock { $0.answer != nil && $0.call.hasNextPage } ? 1 : 0
}
