import AppStoreServer
import AppStoreServerHTTP

#if !HTTP
#error("The tests exercise the AsyncHTTPClient transport: run `swift test --traits HTTP` (scripts/test-all does)")
#endif

/// The default transport of the AppStoreServerHTTP product (AsyncHTTPClient), kept in one file.
enum AsyncHTTPClientTransportFactory {
    static func make() -> any HTTPTransport { AsyncHTTPClientTransport() }
}
