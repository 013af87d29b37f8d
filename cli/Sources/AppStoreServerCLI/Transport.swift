import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif
import CLIHTTP

/// The tool's HTTP transport for the API calls and the verifier's OCSP checks: one blocking HTTP/1.1 exchange per
/// request over a socket, TLS through OpenSSL's libssl (linked in statically), in C (Sources/CLIHTTP). It keeps the
/// rules of every transport of the project: the request's timeout is a deadline for the whole exchange, reading
/// stops at the request's body limit, redirects are returned, never followed, nothing is decompressed, and https://
/// verifies the certificate chain (trust anchors: $SSL_CERT_FILE / $SSL_CERT_DIR, else the distribution's CA
/// bundle) and the host name.
struct ToolHTTPTransport: BlockingHTTPTransport {
    func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
        let what = "\(request.method) \(request.url)"
        var names = request.headers.map { strdup($0.name) }
        var values = request.headers.map { strdup($0.value) }
        defer {
            names.forEach { free($0) }
            values.forEach { free($0) }
        }
        var response = cli_http_response()
        var error = [CChar](repeating: 0, count: 512)
        let rc = names.withUnsafeMutableBufferPointer { n in
            values.withUnsafeMutableBufferPointer { v in
                request.body.withUnsafeBufferPointer { body in
                    n.withMemoryRebound(to: UnsafePointer<CChar>?.self) { n in
                        v.withMemoryRebound(to: UnsafePointer<CChar>?.self) { v in
                            cli_http_send(request.method, request.url, n.baseAddress, v.baseAddress, n.count,
                                          body.baseAddress, body.count, request.timeoutMilliseconds,
                                          max(0, request.maxResponseBytes), &response, &error, error.count)
                        }
                    }
                }
            }
        }
        defer { cli_http_response_free(&response) }
        guard rc == 0 else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw TransportError(TransportError.Kind(rawValue: rc) ?? .failed, "\(what): \(message)")
        }
        var headers: [HTTPHeader] = []
        headers.reserveCapacity(response.header_count)
        for i in 0..<response.header_count {
            headers.append(HTTPHeader(String(cString: response.header_names[i]!), String(cString: response.header_values[i]!)))
        }
        let body = response.body_len == 0 ? [] : [UInt8](UnsafeBufferPointer(start: response.body, count: response.body_len))
        return HTTPResponse(status: Int(response.status), headers: headers, body: body)
    }
}
