public import Foundation

/// RFC 3339 date-times in UTC, `2026-11-24T08:49:37Z` or with milliseconds
/// `2026-11-24T08:49:37.125Z`, written without Foundation's formatters: the same text as
/// `Date.ISO8601FormatStyle` (with or without `includingFractionalSeconds`) from 1582-10-15
/// to 9999-12-31, at a small part of its cost (log lines write two per request). Earlier
/// dates are proleptic Gregorian, as RFC 3339 specifies (Foundation's calendar turns Julian).
public enum RFC3339 {
    /// `date` as text; `milliseconds` adds three fraction digits (truncated, as Foundation does).
    public static func format(_ date: Date, milliseconds: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(date, milliseconds: milliseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `date` as text (see ``format(_:milliseconds:)``) to `bytes`.
    public static func append(_ date: Date, milliseconds: Bool = false, to bytes: inout [UInt8]) {
        let interval = date.timeIntervalSince1970
        let whole = interval.rounded(.down)
        let (days, second) = CivilDate.split(Int(whole))
        let (year, month, day) = CivilDate.civil(fromDays: days)
        digits(year, 4, &bytes)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2, &bytes)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2, &bytes)
        bytes.append(UInt8(ascii: "T"))
        digits(second / 3600, 2, &bytes)
        bytes.append(UInt8(ascii: ":"))
        digits(second / 60 % 60, 2, &bytes)
        bytes.append(UInt8(ascii: ":"))
        digits(second % 60, 2, &bytes)
        if milliseconds {
            bytes.append(UInt8(ascii: "."))
            digits(min(999, Int(((interval - whole) * 1000).rounded(.down))), 3, &bytes)
        }
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `n` (0 ≤ n) in at least `width` decimal digits, zero-padded.
    private static func digits(_ n: Int, _ width: Int, _ bytes: inout [UInt8]) {
        // Every field but a year past 9999 fits its width: written straight.
        if n >= 0 && width >= 2 && width <= 4 && n < (width == 2 ? 100 : width == 3 ? 1000 : 10000) {
            if width == 4 { bytes.append(UInt8(ascii: "0") + UInt8(n / 1000)) }
            if width >= 3 { bytes.append(UInt8(ascii: "0") + UInt8(n / 100 % 10)) }
            bytes.append(UInt8(ascii: "0") + UInt8(n / 10 % 10))
            bytes.append(UInt8(ascii: "0") + UInt8(n % 10))
            return
        }
        var scratch: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var v = max(0, n)
        withUnsafeMutableBytes(of: &scratch) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                count += 1
            } while v > 0 && count < 8
            while count < width {
                buffer[count] = UInt8(ascii: "0")
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[i]) }
        }
    }
}
