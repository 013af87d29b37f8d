/// RFC 3339 date-times as receipts carry them ("2020-07-22T17:39:08Z", "2021-04-16T10:59:33+0800",
/// fractional seconds allowed), to milliseconds since 1970 (fractions below a millisecond are truncated).
enum ReceiptDate {
    static func milliseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard n <= b.count - i else { return nil }
            var v: Int64 = 0
            for _ in 0..<n {
                let c = b[i]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
                i += 1
            }
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
              let day = digits(2) else { return nil }
        guard i < b.count, b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == UInt8(ascii: " ") else { return nil }
        i += 1
        guard let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")),
              let second = digits(2) else { return nil }
        var millis: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var count = 0
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 {
                if count < 3 { millis = millis * 10 + Int64(b[i] - 0x30) }
                count += 1
                i += 1
                guard count <= 9 else { return nil }
            }
            guard count > 0 else { return nil }
            for _ in count..<max(count, 3) { millis *= 10 }
        }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign: Int64 = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(UInt8(ascii: ":"))
            guard let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return seconds * 1000 + millis
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (year 0...9999, so nothing can overflow).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
