import Foundation
import Testing
import AppStoreServer
@testable import AppStoreServerC

@Suite struct CTransportBridgeTests {
    /// A C callback that echoes the request into the response: method + URL in a header, the request headers as
    /// the body, and status 201 — or a failure code chosen by the URL.
    static let echo: CTransportFunction = { _, method, url, headers, headersLen, body, bodyLen, timeout, response in
        let u = String(cString: url!)
        if u.hasSuffix("/timeout") { return 1 }
        if u.hasSuffix("/nostatus") { return 0 }
        _ = appstoreHttpResponseSetStatus(response, 201, nil)
        _ = appstoreHttpResponseAddHeader(response, "X-Echo", "\(String(cString: method!)) \(u) \(timeout)", nil)
        _ = appstoreHttpResponseAppendBody(response, UnsafeRawPointer(headers!).assumingMemoryBound(to: UInt8.self), headersLen, nil)
        if let body { _ = appstoreHttpResponseAppendBody(response, body, bodyLen, nil) }
        return 0
    }

    func transport() throws -> CTransport {
        var t: OpaquePointer?
        #expect(appstoreTransportNew(Self.echo, nil, &t, nil) == 0)
        let object = Unmanaged<CTransport>.fromOpaque(UnsafeRawPointer(t!)).takeRetainedValue()
        return object
    }

    @Test func requestAndResponseCrossTheCallback() throws {
        let t = try transport()
        let r = try t.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:1/x?y=1", headers: [HTTPHeader("A", "b")],
                                       body: Array("hello".utf8), timeoutMilliseconds: 1234))
        #expect(r.status == 201)
        #expect(r.header("x-echo") == "POST http://127.0.0.1:1/x?y=1 1234")
        #expect(String(decoding: r.body, as: UTF8.self) == "A: b\r\nhello")
    }

    @Test func failuresMapToKinds() throws {
        let t = try transport()
        #expect(throws: TransportError(.timeout, "the transport callback reported timeout (code 1) for GET http://h/timeout")) {
            try t.send(HTTPRequest(method: "GET", url: "http://h/timeout"))
        }
        do { _ = try t.send(HTTPRequest(method: "GET", url: "http://h/nostatus")); Issue.record("no status accepted") }
        catch { #expect(error.kind == .failed) }
    }

    @Test func badArgumentsAreRejected() {
        var t: OpaquePointer?
        #expect(appstoreTransportNew(nil, nil, &t, nil) == 1)
        #expect(appstoreHttpResponseSetStatus(nil, 200, nil) == 1)
        appstoreTransportFree(nil)
    }
}
