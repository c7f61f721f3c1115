import AuthCore
import Foundation
import Glibc

/// A wall-clock instant as `clock_gettime(CLOCK_REALTIME)` gives it: whole seconds since
/// 1970 (rounded down) and the nanoseconds past them, so that the access log's
/// milliseconds are truncated from integers rather than from a `Double`.
struct WallTime: Equatable, Sendable {
    /// Seconds since 1970-01-01T00:00:00Z, rounded down.
    var seconds: Int
    /// Nanoseconds past `seconds`, 0..<1_000_000_000.
    var nanoseconds: Int

    /// The instant `seconds` and `nanoseconds` name; `nanoseconds` is brought into range.
    init(seconds: Int, nanoseconds: Int) {
        var (carry, rest) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        if rest < 0 {
            carry -= 1
            rest += 1_000_000_000
        }
        self.init(seconds + carry, rest)
    }

    private init(_ seconds: Int, _ nanoseconds: Int) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// Now.
    static var now: WallTime {
        var ts = timespec()
        guard clock_gettime(CLOCK_REALTIME, &ts) == 0 else {
            // CLOCK_REALTIME always exists; should it ever fail, Foundation's clock answers.
            let t = Date().timeIntervalSince1970
            let whole = t.rounded(.down)
            return WallTime(seconds: Int(whole), nanoseconds: Int((t - whole) * 1e9))
        }
        return WallTime(ts.tv_sec, ts.tv_nsec)
    }

    /// The same instant as a `Date` (to the precision a `Double` keeps).
    var date: Date { Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9) }
}

/// The text of one second, `2026-11-24T08:49:37`, made by ``RFC3339`` when the second
/// changes and copied as it is for every line within it: a log line's dates cost a compare and
/// a copy, not the calendar arithmetic.
struct SecondText {
    private var second = Int.min
    private var text: [UInt8] = []

    /// Appends `time` as ``RFC3339/append(_:milliseconds:to:)`` writes it, `...:37Z` or, with
    /// `milliseconds`, `...:37.125Z` (truncated).
    mutating func append(_ time: WallTime, milliseconds: Bool, to line: AccessLogBuffer) {
        if time.seconds != second {
            second = time.seconds
            text.removeAll(keepingCapacity: true)
            RFC3339.append(Date(timeIntervalSince1970: Double(time.seconds)), to: &text)
            text.removeLast()  // its "Z"
        }
        text.withUnsafeBufferPointer { line.append($0) }
        if milliseconds {
            let ms = time.nanoseconds / 1_000_000
            line.append(UInt8(ascii: "."))
            line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: ms / 100))
            line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: ms / 10 % 10))
            line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: ms % 10))
        }
        line.append(UInt8(ascii: "Z"))
    }
}
