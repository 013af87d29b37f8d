import Foundation
import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

/// Test-only blocking HTTP/1.1 transport over POSIX sockets (http:// loopback servers; Connection: close;
/// Content-Length or read-to-close bodies; poll() timeouts). Counts requests for cache tests.
final class SocketTransport: BlockingHTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var requests: Int { lock.lock(); defer { lock.unlock() }; return count }

    func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
        lock.lock(); count += 1; lock.unlock()
        let deadline = Date().addingTimeInterval(Double(request.timeoutMilliseconds) / 1000)
        guard let url = URL(string: request.url), url.scheme == "http", let host = url.host else {
            throw TransportError(.failed, "only http:// URLs: \(request.url)")
        }
        let port = url.port ?? 80
        // The request target exactly as given (already percent-encoded): everything after scheme://authority.
        let afterScheme = request.url.dropFirst("http://".count)
        let path = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let ai = info else {
            throw TransportError(.unreachable, "cannot resolve \(host)")
        }
        defer { freeaddrinfo(info) }
        let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TransportError(.failed, "socket() failed") }
        defer { close(fd) }
        if connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
            throw TransportError(.unreachable, "connect to \(host):\(port) failed")
        }
        func wait(_ events: Int16) throws(TransportError) {
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = poll(&p, 1, left)
            if r == 0 { throw TransportError(.timeout, "\(request.method) \(request.url) timed out") }
            if r < 0 { throw TransportError(.failed, "poll failed") }
        }
        try wait(Int16(POLLOUT))
        var soerr: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len)
        if soerr != 0 { throw TransportError(.unreachable, "connect to \(host):\(port) refused") }
        var head = "\(request.method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
            + "Content-Length: \(request.body.count)\r\n"
        for h in request.headers { head += "\(h.name): \(h.value)\r\n" }
        var out = Array((head + "\r\n").utf8) + request.body
        while !out.isEmpty {
            try wait(Int16(POLLOUT))
            let n = out.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EAGAIN || errno == EINTR { continue }; throw TransportError(.failed, "send failed") }
            out.removeFirst(n)
        }
        var data = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 16384)
        while true {
            try wait(Int16(POLLIN))
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { if errno == EAGAIN || errno == EINTR { continue }; throw TransportError(.failed, "recv failed") }
            if n == 0 { break }
            data += buf[0..<n]
        }
        guard let split = data.indices.first(where: { i in i + 3 < data.count && data[i...i + 3].elementsEqual([13, 10, 13, 10]) }) else {
            throw TransportError(.failed, "no HTTP response head")
        }
        let lines = String(decoding: data[..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw TransportError(.failed, "bad status line") }
        var headers: [HTTPHeader] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(HTTPHeader(String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var body = Array(data[(split + 4)...])
        if let cl = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }), cl < body.count {
            body = Array(body.prefix(cl))
        }
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
