import FoundationEssentials

/// What the host of an `AppStoreServerAPICall` does next.
public enum APICallAction: Sendable {
    /// Send this request, then report what happened with `receive(_:nowMilliseconds:)` or `receive(failure:)`.
    case send(HTTPRequest)
    /// Wait this long (a rate-limit slot, or the delay before a retry), then ask `next(nowMilliseconds:)` again.
    case wait(milliseconds: UInt64)
    /// A 2xx answer and the environment that gave it. For a paginated endpoint, `hasNextPage` says whether asking
    /// `next` again goes on to the following page.
    case done(APIAnswer)
}

/// One App Store Server API call, driven by its host: the call loop of every client (Swift, the C ABI, Python, Node,
/// the tool), written once. It owns the rate-limit reservation per endpoint and environment (before the token is
/// signed), one fresh token per attempt, the retry policy with Retry-After, the Sandbox fallback of lookups, and the
/// following pages of a paginated endpoint; the host only moves bytes and waits. Sans-I/O, like a TLS connection
/// object: it never sleeps, never opens a socket, and reads no clock but the `nowMilliseconds` it is given (and the
/// monotonic clock around an external signer, which runs inside `next`).
///
/// The client's timeout is a deadline for the whole call (each page of a paginated one): it starts at the first
/// `next` (of the page), and everything after counts against it — rate-limit waits, the external signer, each
/// exchange, backoff and Retry-After waits, the Sandbox fallback. A wait that would end at or after the deadline,
/// and a signer that answers at or after it, end the call with `deadlineExceeded` (TRANSPORT_ERROR /
/// DEADLINE_EXCEEDED) instead; an external signer is told the time left (`ES256Signer.sign(…timeoutMilliseconds:)`),
/// and each request sent carries it as its `timeoutMilliseconds` (never more than the client's timeout).
///
///     let call = AppStoreServerAPICall(caller: caller, request: .getTransactionInfo(transactionId: id))
///     loop: while true {
///         switch try call.next() {
///         case .send(let http): do { call.receive(try transport.send(http)) } catch { call.receive(failure: error) }
///         case .wait(let ms): sleep(ms)
///         case .done(let answer): return answer
///         }
///     }
///
/// Not thread-safe: one host drives one call (the C ABI's handle adds a lock).
public final class AppStoreServerAPICall {
    private enum State {
        /// Reserve a rate-limit slot, then build.
        case reserve
        /// The slot is held (or there is no limit): build with a fresh token and send.
        case build
        /// Sent; waiting for `receive`.
        case sent(HTTPRequest)
        /// What the transport reported, judged by the next `next`.
        case received(Result<HTTPResponse, TransportError>, now: Int64)
        /// A page was answered; `next` goes on to `following` when there is one, or throws why there cannot be one
        /// (a repeated token: kept for `next`, so a caller that wants one page never meets it).
        case answered(following: Result<AppStoreServerAPIRequest?, AppStoreServerAPIError>)
        /// Failed or finished: `next` refuses.
        case over(String)
    }

    /// The client's caller: request builders, retry policy, rate limiter.
    public let caller: AppStoreServerAPICaller
    /// Whether a 2xx body must decode into the endpoint's model before `done` (the C ABI's promise); Swift's typed
    /// methods decode it themselves and turn this off.
    public let checksBody: Bool
    /// The request of the current page.
    public private(set) var request: AppStoreServerAPIRequest
    private var state = State.reserve
    private var builder: AppStoreServerAPIRequestBuilder
    /// Production's error while its lookup is being asked in Sandbox (for the message when Sandbox fails too).
    private var production: AppStoreServerAPIError?
    private var retries = 0
    private var pages = 0
    private var seen: Set<AppStoreServerAPIRequest> = []
    /// When the current page's call must be over, in the host's milliseconds: set by the first `next` of the page.
    public private(set) var deadlineMilliseconds: Int64?
    /// After `done`, when `checksBody`: the answer as JSON text (the body as sent, or `{}` for endpoints without a
    /// response body).
    public private(set) var answerJSON: [UInt8]?
    /// The error of the last attempt while a retry or the fallback is pending (what an interrupted wait reports).
    public private(set) var lastError: AppStoreServerAPIError?

    /// A call of `request` through `caller`.
    /// - Parameters:
    ///   - caller: the client's caller (request builders, retry policy, rate limiter).
    ///   - request: the endpoint and its parameters.
    ///   - environment: `.sandbox` sends a fallback client's call to Sandbox directly.
    ///   - checksBody: whether a 2xx body must decode into the endpoint's model before `done`.
    public init(caller: AppStoreServerAPICaller, request: AppStoreServerAPIRequest, environment: AppStoreEnvironment? = nil,
                checksBody: Bool = true) {
        self.caller = caller
        self.request = request
        self.checksBody = checksBody
        self.builder = environment == .sandbox ? caller.fallbackBuilder ?? caller.builder : caller.builder
    }

    /// The environment the current request goes to (Sandbox once a lookup fell back).
    public var environment: AppStoreEnvironment { builder.environment }

    /// After `done`: whether `next` goes on to another page.
    public var hasNextPage: Bool {
        if case .answered(let following) = state, (try? following.get()) != .some(nil) { return true }
        return false
    }

    /// What to do next. Throws the call's final error (and every later `next` throws that it is over), or a misuse
    /// (`next` before the sent request's outcome was received).
    public func next(nowMilliseconds now: Int64 = Timestamp.nowMilliseconds()) throws(AppStoreServerAPIError) -> APICallAction {
        do throws(AppStoreServerAPIError) {
            if deadlineMilliseconds == nil { deadlineMilliseconds = Self.plus(now, Int64(caller.builder.timeoutMilliseconds)) }
            return try step(now)
        } catch {
            if case .sent = state { throw error }  // a misuse; the call goes on
            state = .over("\(request.endpoint.name): the call has failed")
            // Whatever ends a fallback (Sandbox's answer, its rate-limit slot, its token) says what Production said.
            if let production, !error.message.hasPrefix("Production answered") {
                throw AppStoreServerAPICaller.neither(production: production, sandbox: error)
            }
            throw error
        }
    }

    private func step(_ now: Int64) throws(AppStoreServerAPIError) -> APICallAction {
        while true {
            switch state {
            case .reserve:
                state = .build
                if let limiter = caller.rateLimiter {
                    let slot = try limiter.reserve(request.endpoint, environment: builder.environment, nowMilliseconds: now,
                                                   before: deadlineMilliseconds)
                    if slot.late {
                        throw deadline(now, "the rate limit's next free slot is \(Self.minus(slot.slot, now)) ms away",
                                       retryAt: slot.slot)
                    }
                    if slot.wait > 0 { return .wait(milliseconds: slot.wait) }
                }
            case .build:
                let http = try build(now)
                state = .sent(http)
                return .send(http)
            case .sent:
                throw .argument("\(request.endpoint.name): next() before the outcome of the request sent was received")
            case .received(.success(let response), _) where (200...299).contains(response.status):
                answerJSON = checksBody ? try AppStoreServerAPIResponseDecoder.json(endpoint: request.endpoint, response: response) : nil
                let following: Result<AppStoreServerAPIRequest?, AppStoreServerAPIError> = request.endpoint.isPaginated
                    ? Result { () throws(AppStoreServerAPIError) in try AppStoreServerAPIPagination.nextPage(after: request, response: response) }
                    : .success(nil)
                production = nil  // later pages stay where this one was answered, and fail as themselves
                lastError = nil
                state = .answered(following: following)
                return .done(APIAnswer(response: response, environment: builder.environment))
            case .received(let result, let at):
                let error = Self.failure(request.endpoint, result, now: at)
                lastError = error
                retries += 1
                if let delay = caller.retryPolicy.delayMilliseconds(beforeRetry: retries, after: error, nowMilliseconds: now) {
                    let end = Self.plus(now, Int64(clamping: delay))
                    if let deadline = deadlineMilliseconds, end >= deadline {
                        throw self.deadline(now, "the retry would wait \(delay) ms (after \(error.message))", retryAt: end)
                    }
                    state = .reserve
                    return .wait(milliseconds: delay)
                }
                if production == nil, builder.environment != .sandbox, caller.fallsBack(request.endpoint, after: error),
                   let fallback = caller.fallbackBuilder {
                    production = error
                    builder = fallback
                    retries = 0
                    state = .reserve
                    continue
                }
                throw error  // next() adds what Production said when this ends a fallback
            case .answered(let next):
                guard let following = try next.get() else { throw .argument("\(request.endpoint.name): the call is over (no further page)") }
                guard pages + 1 < AppStoreServerAPIPagination.maxPages else {
                    throw .argument("\(request.endpoint.name): more than \(AppStoreServerAPIPagination.maxPages) pages", request.endpoint)
                }
                seen.insert(request)
                guard seen.insert(following).inserted else { throw AppStoreServerAPIPagination.cycle(following) }
                pages += 1
                request = following
                retries = 0
                deadlineMilliseconds = Self.plus(now, Int64(caller.builder.timeoutMilliseconds))  // each page is a call of its own
                state = .reserve
            case .over(let why):
                throw .argument(why + "; make a new call")
            }
        }
    }

    /// The request of the current attempt, signed with what is left of the deadline: its `timeoutMilliseconds` is
    /// the time left once the token is signed (at most the client's timeout). An external signer's time is measured
    /// here with the monotonic clock (the host's clock is not asked in the middle of a step); a signer that answers
    /// at or after the deadline ends the call, its signature discarded.
    private func build(_ now: Int64) throws(AppStoreServerAPIError) -> HTTPRequest {
        let deadline = deadlineMilliseconds ?? Self.plus(now, Int64(caller.builder.timeoutMilliseconds))
        let left = Self.minus(deadline, now)
        guard left > 0 else { throw self.deadline(now, "no time is left to send the request", retryAt: nil) }
        let external = builder.signingKey.isExternal
        let started = external ? Timestamp.monotonicMilliseconds() : 0
        var http: HTTPRequest
        do throws(AppStoreServerAPIError) {
            http = try builder.build(request, signerTimeLeftMilliseconds: left)
        } catch {
            let took = external ? Timestamp.monotonicMilliseconds() - started : 0
            if external, took >= left {  // the signer (or its binding) gave up at the deadline
                throw self.deadline(now, "the external signer did not answer within the \(left) ms left (\(error.message))",
                                    retryAt: nil)
            }
            throw error
        }
        let took = external ? Timestamp.monotonicMilliseconds() - started : 0
        guard took < left else {
            throw self.deadline(now, "the external signer took \(took) ms of the \(left) ms left; its signature is discarded",
                                retryAt: nil)
        }
        http.timeoutMilliseconds = UInt32(clamping: min(Int64(http.timeoutMilliseconds), left - took))
        return http
    }

    /// The call's end at its deadline: `what` would pass it. Names the timeout, the time left and what happened.
    private func deadline(_ now: Int64, _ what: String, retryAt: Int64?) -> AppStoreServerAPIError {
        let timeout = caller.builder.timeoutMilliseconds
        let left = max(0, Self.minus(deadlineMilliseconds ?? now, now))
        return AppStoreServerAPIError(kind: .deadlineExceeded, endpoint: request.endpoint,
                                      message: "\(request.endpoint.name): the client's timeout of \(timeout) ms (a deadline for the "
                                          + "whole call) ran out: \(left) ms were left and \(what)",
                                      retryAfter: retryAt.map { RetryAfter(atMilliseconds: $0) }, receivedAtMilliseconds: now)
    }

    /// Saturating arithmetic on the host's times: a host may pass any `now` (the C ABI's `now_ms`), and nothing it
    /// passes may trap.
    static func plus(_ a: Int64, _ b: Int64) -> Int64 {
        let (r, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : r
    }
    static func minus(_ a: Int64, _ b: Int64) -> Int64 {
        let (r, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : r
    }

    /// The answer to the request of the last `.send`; false (and ignored) when no request awaits one.
    @discardableResult
    public func receive(_ response: HTTPResponse, nowMilliseconds now: Int64 = Timestamp.nowMilliseconds()) -> Bool {
        guard case .sent = state else { return false }
        state = .received(.success(response), now: now)
        return true
    }

    /// The request of the last `.send` got no answer. Transport failures are final (the request may have reached
    /// Apple): the next `next` throws it. False (and ignored) when no request awaits an outcome.
    @discardableResult
    public func receive(failure: TransportError) -> Bool {
        guard case .sent = state else { return false }
        state = .received(.failure(failure), now: 0)
        return true
    }

    /// Whether the call waits for `receive` (a `.send` was returned and not yet answered).
    public var awaitsResponse: Bool {
        if case .sent = state { return true }
        return false
    }

    static func failure(_ endpoint: AppStoreServerAPIEndpoint, _ result: Result<HTTPResponse, TransportError>,
                        now: Int64) -> AppStoreServerAPIError {
        switch result {
        case .failure(let t):
            return AppStoreServerAPIError(kind: .transport(t.kind), endpoint: endpoint, message: "\(endpoint.name): \(t.description)")
        case .success(let response):
            return AppStoreServerAPIResponseDecoder.error(endpoint: endpoint, response: response, nowMilliseconds: now)
        }
    }
}
