#if canImport(Glibc)
import Glibc
#endif

/// The `Retry-After` header of an App Store Server API answer. Apple sends "a UNIX time, in milliseconds, that
/// informs you when you can next send a request" (Identifying rate limits); a proxy in between may send the standard
/// forms instead, delta-seconds or an HTTP-date (RFC 9110). All three are read; anything else is ignored.
public struct RetryAfter: Hashable, Sendable {
    /// Which of the three forms the header had.
    public enum Form: String, Hashable, Sendable {
        /// Apple's form: an absolute UNIX time in milliseconds.
        case unixMilliseconds
        /// Seconds to wait from the answer.
        case deltaSeconds
        /// An HTTP-date (IMF-fixdate, RFC 850 or asctime).
        case httpDate
    }

    /// Which of the three forms the header had.
    public let form: Form
    /// When the next request may be sent, in milliseconds since 1970.
    public let atMilliseconds: Int64

    /// All-digit values from this one up are UNIX milliseconds (1973-03-03); below, delta-seconds (3,170 years).
    static let unixMillisecondsThreshold: Int64 = 100_000_000_000

    /// An absolute time, in Apple's form (the client's own rate limiter uses it too).
    public init(atMilliseconds: Int64) {
        self.form = .unixMilliseconds
        self.atMilliseconds = atMilliseconds
    }

    /// Parses the header value; `nowMilliseconds` anchors delta-seconds.
    public init?(_ value: String, nowMilliseconds: Int64) {
        let text = value.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
        let bytes = Array(text)
        guard !bytes.isEmpty, bytes.count <= 64 else { return nil }
        if bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard bytes.count <= 18, let n = Int64(String(decoding: bytes, as: UTF8.self)) else { return nil }
            if n >= Self.unixMillisecondsThreshold {
                self.form = .unixMilliseconds
                self.atMilliseconds = n
            } else {
                self.form = .deltaSeconds
                let (at, overflow) = nowMilliseconds.addingReportingOverflow(n * 1000)  // n < 10^11: n * 1000 fits
                self.atMilliseconds = overflow ? Int64.max : at
            }
            return
        }
        guard let seconds = HTTPDate.parse(bytes) else { return nil }
        self.form = .httpDate
        self.atMilliseconds = seconds * 1000
    }

    /// Whole seconds from `nowMilliseconds` until the time, rounded up; 0 when it has passed.
    public func seconds(from nowMilliseconds: Int64) -> Int64 {
        let ms = atMilliseconds > nowMilliseconds ? atMilliseconds - nowMilliseconds : 0
        return (ms + 999) / 1000
    }
}

/// HTTP-date (RFC 9110 section 5.6.7): IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, and the obsolete RFC 850
/// `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994` forms. Seconds since 1970.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func parse(_ bytes: [UInt8]) -> Int64? {
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: String?
        if parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT" {          // IMF-fixdate
            (day, month, year, time) = (Int(parts[1]), monthNumber(parts[2]), Int(parts[3]), parts[4])
        } else if parts.count == 4, parts[0].hasSuffix(","), parts[3] == "GMT" {   // RFC 850
            let d = parts[1].split(separator: "-").map(String.init)
            guard d.count == 3, let yy = Int(d[2]), d[2].count == 2 else { return nil }
            (day, month, year, time) = (Int(d[0]), monthNumber(d[1]), yy < 70 ? 2000 + yy : 1900 + yy, parts[2])
        } else if parts.count == 5 {                                                // asctime
            (day, month, year, time) = (Int(parts[2]), monthNumber(parts[1]), Int(parts[4]), parts[3])
        }
        guard let day, let month, let year, let time, (1...31).contains(day), (1970...9999).contains(year) else { return nil }
        let hms = time.split(separator: ":").map { Int($0) }
        guard hms.count == 3, let h = hms[0], let m = hms[1], let s = hms[2],
              (0...23).contains(h), (0...59).contains(m), (0...60).contains(s) else { return nil }
        var t = tm()
        t.tm_year = Int32(year - 1900)
        t.tm_mon = Int32(month - 1)
        t.tm_mday = Int32(day)
        t.tm_hour = Int32(h)
        t.tm_min = Int32(m)
        t.tm_sec = Int32(s)
        return Int64(timegm(&t))
    }

    private static func monthNumber(_ s: String) -> Int? { months.firstIndex(of: s).map { $0 + 1 } }
}
