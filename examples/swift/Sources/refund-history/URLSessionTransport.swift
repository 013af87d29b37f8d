import AppStoreServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The library's `HTTPTransport` over URLSession, keeping the rules every transport keeps: the request's timeout
/// bounds the whole exchange, a body past the request's limit stops the download, and redirects are never followed
/// (the 3xx goes back to the library, which fails the call naming it: a redirect must not carry the bearer token
/// elsewhere).
struct URLSessionTransport: HTTPTransport {
    func send(_ request: AppStoreServer.HTTPRequest) async throws(TransportError) -> AppStoreServer.HTTPResponse {
        guard let url = URL(string: request.url) else { throw TransportError(.failed, "not a URL: \(request.url)") }
        var r = URLRequest(url: url)
        r.httpMethod = request.method
        for header in request.headers { r.addValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty { r.httpBody = Data(request.body) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForResource = Double(request.timeoutMilliseconds) / 1000
        configuration.timeoutIntervalForRequest = configuration.timeoutIntervalForResource
        let exchange = Exchange(limit: request.maxResponseBytes)
        let session = URLSession(configuration: configuration, delegate: exchange, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        return try await exchange.run(session.dataTask(with: r))
    }
}

/// One exchange's delegate: collects the body up to the limit and reports the outcome once.
private final class Exchange: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let limit: Int
    private let lock = NSLock()
    private var body = Data()
    private var tooLarge = false
    private var continuation: CheckedContinuation<AppStoreServer.HTTPResponse, any Error>?

    init(limit: Int) { self.limit = limit }

    func run(_ task: URLSessionDataTask) async throws(TransportError) -> AppStoreServer.HTTPResponse {
        do {
            return try await withCheckedThrowingContinuation { c in
                lock.withLock { continuation = c }
                task.resume()
            }
        } catch let e as TransportError { throw e } catch { throw TransportError(.failed, "\(error)") }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)  // never follow: the 3xx itself is the answer
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let stop = lock.withLock { () -> Bool in
            body.append(data)
            tooLarge = body.count > limit
            return tooLarge
        }
        if stop { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (c, body, tooLarge) = lock.withLock { () -> (CheckedContinuation<AppStoreServer.HTTPResponse, any Error>?, Data, Bool) in
            defer { continuation = nil }
            return (continuation, self.body, self.tooLarge)
        }
        let what = "\(task.originalRequest?.httpMethod ?? "?") \(task.originalRequest?.url?.absoluteString ?? "?")"
        if tooLarge {
            c?.resume(throwing: TransportError(.failed, "\(what): the answer is larger than \(limit) bytes"))
        } else if let error = error as? URLError {
            let kind: TransportError.Kind = switch error.code {
            case .timedOut: .timeout
            case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet: .unreachable
            default: .failed
            }
            c?.resume(throwing: TransportError(kind, "\(what): \(error.localizedDescription)"))
        } else if let error {
            c?.resume(throwing: TransportError(.failed, "\(what): \(error)"))
        } else if let http = task.response as? HTTPURLResponse {
            let headers = http.allHeaderFields.map { HTTPHeader("\($0.key)", "\($0.value)") }
            c?.resume(returning: AppStoreServer.HTTPResponse(status: http.statusCode, headers: headers, body: [UInt8](body)))
        } else {
            c?.resume(throwing: TransportError(.failed, "\(what): no HTTP response"))
        }
    }
}
