import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Clock and date conversions the library uses (wall clock; see also `Monotonic` uses in the chain cache).
public enum Timestamp {
    /// Seconds since 1970 of a decoded date, clamped to a range time_t and certificates can express, so absurd
    /// payload dates fail validity checks instead of trapping on conversion (no certificate predates 1970).
    static func seconds(_ date: Date) -> Int64 {
        let t = date.timeIntervalSince1970.rounded(.down)
        guard t.isFinite else { return t < 0 ? 0 : limit }
        return Int64(max(0, min(Double(limit), t)))
    }
    static let limit: Int64 = 253_402_300_799  // 9999-12-31T23:59:59Z

    static func now() -> Int64 { seconds(Date()) }

    /// Milliseconds on the monotonic clock (durations: setting the wall clock neither shortens nor stretches them).
    static func monotonicMilliseconds() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000
    }

    /// UTC ISO 8601 text for messages, without Foundation's formatters.
    static func iso8601(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return "\(seconds)s" }
        func pad(_ v: Int32, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))Z"
    }
}

extension Timestamp {
    /// The current wall-clock time in milliseconds since 1970.
    public static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Milliseconds since 1970, clamped like `seconds(_:)`.
    static func milliseconds(_ date: Date) -> Int64 {
        let t = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard t.isFinite else { return t < 0 ? 0 : limit * 1000 }
        return Int64(max(0, min(Double(limit) * 1000, t)))
    }
}
