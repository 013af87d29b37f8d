import AppStoreServer
import AppStoreServerHTTP

/// The default transport of the AppStoreServerHTTP product (AsyncHTTPClient), kept in one file.
enum AsyncHTTPClientTransportFactory {
    static func make() -> any HTTPTransport { AsyncHTTPClientTransport() }
}
