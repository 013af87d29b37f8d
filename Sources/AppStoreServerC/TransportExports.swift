import AppStoreServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The C transport callback (see `appstore_transport_fn` in the header).
public typealias CTransportFunction = @convention(c) (
    UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UInt,
    UnsafePointer<UInt8>?, UInt, UInt32, OpaquePointer?
) -> Int32

/// The object behind `appstore_http_response *`: what the host's callback fills in.
final class ResponseBox: Sendable {
    /// Most bytes the body may have: the exchange's limit (APPSTORE_LIMIT_API_RESPONSE_BYTES for API calls,
    /// APPSTORE_LIMIT_OCSP_RESPONSE_BYTES for OCSP). appstore_http_response_append_body refuses to go beyond it.
    let maxBodyBytes: Int
    init(maxBodyBytes: Int) { self.maxBodyBytes = maxBodyBytes }

    struct Values {
        var status: Int?
        var headers: [HTTPHeader] = []
        var body: [UInt8] = []
        /// An append was refused for exceeding `maxBodyBytes`: the exchange fails whatever the callback returns.
        var bodyTooLarge = false
    }
    let values = Locked(Values())
}

/// The object behind `appstore_transport *`: a host callback, used as a blocking transport on the calling thread.
final class CTransport: BlockingHTTPTransport, @unchecked Sendable {
    // The host promises the callback and user_data may be used from any thread (header contract).
    let function: CTransportFunction
    let userData: UnsafeMutableRawPointer?

    init(function: CTransportFunction, userData: UnsafeMutableRawPointer?) {
        self.function = function
        self.userData = userData
    }

    func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
        let response = ResponseBox(maxBodyBytes: request.maxResponseBytes)
        let unmanaged = Unmanaged.passRetained(response)
        defer { unmanaged.release() }
        let headerText = request.headers.map { "\($0.name): \($0.value)\r\n" }.joined()
        let rc: Int32 = request.method.withCString { method in
            request.url.withCString { url in
                headerText.withCString { headers in
                    request.body.withUnsafeBufferPointer { body in
                        // Outside the fork guard: the host's transport may fork (see guarded).
                        ForkGuard.outside {
                            function(userData, method, url, headers, UInt(headerText.utf8.count), body.baseAddress,
                                     UInt(body.count), request.timeoutMilliseconds, OpaquePointer(unmanaged.toOpaque()))
                        }
                    }
                }
            }
        }
        guard rc == 0 else {
            let kind = TransportError.Kind(rawValue: rc) ?? .failed
            throw TransportError(kind, "the transport callback reported \(kind) (code \(rc)) for \(request.method) \(request.url)")
        }
        let v = response.values.withLock { $0 }
        if v.bodyTooLarge {
            throw TransportError(.failed, "the response to \(request.method) \(request.url) is larger than "
                + "\(response.maxBodyBytes) bytes, the most the library accepts for this exchange")
        }
        guard let status = v.status else {
            throw TransportError(.failed, "the transport callback returned success without setting a status")
        }
        return HTTPResponse(status: status, headers: v.headers, body: v.body)
    }
}

@c(appstore_transport_new)
public func appstoreTransportNew(_ function: CTransportFunction?, _ userData: UnsafeMutableRawPointer?,
                                 _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        guard let function else { throw CFailure.argument("fn is NULL") }
        try output(out, "transport_out") { CTransport(function: function, userData: userData) }
    }
}

@c(appstore_transport_free)
public func appstoreTransportFree(_ transport: OpaquePointer?) { release(transport, CTransport.self) }

@c(appstore_http_response_set_status)
public func appstoreHttpResponseSetStatus(_ response: OpaquePointer?, _ status: Int32, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(response, ResponseBox.self, "response")
        guard (100...599).contains(status) else { throw CFailure.argument("status \(status) is not an HTTP status (100-599)") }
        box.values.withLock { $0.status = Int(status) }
    }
}

@c(appstore_http_response_add_header)
public func appstoreHttpResponseAddHeader(_ response: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                          _ value: UnsafePointer<CChar>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(response, ResponseBox.self, "response")
        let n = try utf8String(name, "name")
        let v = try utf8String(value, "value")
        guard !n.isEmpty else { throw CFailure.argument("name is empty") }
        box.values.withLock { $0.headers.append(HTTPHeader(n, v)) }
    }
}

@c(appstore_http_response_append_body)
public func appstoreHttpResponseAppendBody(_ response: OpaquePointer?, _ data: UnsafePointer<UInt8>?, _ len: UInt,
                                           _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(response, ResponseBox.self, "response")
        let view = try bytes(data.map(UnsafeRawPointer.init), len, "data")
        let had: Int? = box.values.withLock { v in
            // Checked before anything is copied; once refused, the body stays refused.
            guard !v.bodyTooLarge, view.count <= box.maxBodyBytes - v.body.count else {
                v.bodyTooLarge = true
                return v.body.count
            }
            v.body.append(contentsOf: view)
            return nil
        }
        if let had {
            throw CFailure.argument("the response body would exceed \(box.maxBodyBytes) bytes, this exchange's limit: \(had) bytes "
                + "so far, \(len) more; the exchange fails")
        }
    }
}

@c(appstore_http_response_body_limit)
public func appstoreHttpResponseBodyLimit(_ response: OpaquePointer?) -> UInt {
    guard let response else { return 0 }
    return UInt(Unmanaged<ResponseBox>.fromOpaque(UnsafeRawPointer(response)).takeUnretainedValue().maxBodyBytes)
}
