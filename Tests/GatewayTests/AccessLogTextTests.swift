import AuthCore
import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// The access log's byte-level formatting gives the bytes of the general code it stands in for:
/// quoting as `Problem.appendQuoted`, the duration as Swift prints the `Double`, the trace id
/// as `AccessLogRecord.traceID`, dates as `RFC3339` across second, day and year boundaries.
@Suite struct AccessLogTextTests {
    static func quoted(_ s: String) -> [UInt8] {
        let out = AccessLogBuffer(capacity: 4)
        AccessLogText.appendQuoted(s, to: out)
        return Array(out.bytes)
    }

    /// The nanoseconds of `d` (within ±292 years).
    static func nanoseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
    }

    static func reference(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        Problem.appendQuoted(s, to: &out)
        return out
    }

    // MARK: Quoting

    @Test(arguments: [
        "", "/", "/api/items", "/a/long/path/with/more/than/sixteen/bytes/in/it", "GET",
        #"/a/"quoted""#, #"back\slash"#, "tab\there", "line\nfeed", "cr\rhere", "\u{0}", "\u{1F}", "\u{7F}",
        "π/ünïcødé/日本", "😀 emoji", "exactly8", "exactly8\"", "1234567\u{1}", "12345678\u{1}", "é\"", "/%22/%5C",
    ])
    func quotingIsTheGeneralQuoting(_ s: String) {
        #expect(Self.quoted(s) == Self.reference(s))
    }

    /// Every byte value that may stand in a string, at every position of words and tails: the
    /// eight-at-a-time test finds exactly the bytes the one-at-a-time one does.
    @Test func theWordTestFindsEveryByteThatNeedsAnEscapeAndNoOther() {
        for length in 1...19 {
            for position in 0..<length {
                for b in UInt8(0)...0x7F {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = b
                    let expected = b < 0x20 || b == 0x22 || b == 0x5C
                    let found = bytes.withUnsafeBufferPointer { AccessLogText.needsEscaping($0) }
                    #expect(found == expected, "byte \(b) at \(position) of \(length)")
                }
            }
        }
        // Bytes of multi-byte characters (0x80…0xFF) beside the limits never count.
        for high in UInt8(0x80)...0xFF {
            for low: UInt8 in [0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D] {
                let bytes: [UInt8] = [high, low, high, high, low &+ 1, high, high, high, high]
                let expected = bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
                #expect(bytes.withUnsafeBufferPointer { AccessLogText.needsEscaping($0) } == expected)
            }
        }
    }

    @Test func randomStringsQuoteAsTheGeneralQuoting() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "Z", "/", "\"", "\\", "\n", "\u{1}", "\u{7F}", "é", "π", "😀", " ", "%"]
        for _ in 0..<2_000 {
            let s = String(
                (0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            #expect(Self.quoted(s) == Self.reference(s), "\(s.debugDescription)")
        }
    }

    // MARK: The duration

    static func milliseconds(_ d: Duration) -> String {
        let out = AccessLogBuffer()
        AccessLogText.appendMilliseconds(nanoseconds: nanoseconds(d), to: out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    @Test(
        arguments: [
            (Duration.zero, "0.0"), (.microseconds(1), "0.001"), (.microseconds(50), "0.05"), (.microseconds(100), "0.1"),
            (.milliseconds(1500), "1500.0"), (.microseconds(1_234_567), "1234.567"), (.nanoseconds(1_499), "0.001"),
            (.nanoseconds(1_500), "0.002"), (.seconds(86_400 * 365), "31536000000.0"),
            (.nanoseconds(999_999_999_999_999_999), "1000000000000.0"),
        ] as [(Duration, String)])
    func aDurationPrintsAsItsDouble(_ d: Duration, _ text: String) {
        #expect(Self.milliseconds(d) == text)
        #expect(Self.milliseconds(d) == "\(AccessLogText.milliseconds(d))")
    }

    /// Every microsecond up to 0.2 s, and samples up to 10¹² ms and beyond (where Swift prints
    /// the `Double` itself): the digits are the `Double`'s text.
    @Test func everyDurationPrintsAsItsDouble() {
        for us in 0..<200_000 {
            let d = Duration.microseconds(us)
            #expect(Self.milliseconds(d) == "\(AccessLogText.milliseconds(d))")
        }
        var generator = SystemRandomNumberGenerator()
        for exponent in 6...18 {
            for _ in 0..<2_000 {
                let ns = Int64.random(in: 0..<Int64(pow(10, Double(exponent))), using: &generator)
                let d = Duration.nanoseconds(ns)
                #expect(Self.milliseconds(d) == "\(AccessLogText.milliseconds(d))", "\(ns) ns")
            }
        }
        for d in [
            Duration.nanoseconds(-1_500), .seconds(-3), .seconds(999_999_999), .seconds(1_000_000_000), .seconds(9_000_000_000),
            .nanoseconds(Int64.max),
        ] {
            #expect(Self.milliseconds(d) == "\(AccessLogText.milliseconds(d))", "\(d)")
        }
    }

    // MARK: The trace id

    @Test(arguments: [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        "garbage", "", "00-1-2-3",
    ])
    func theTraceIDIsTheRecordsTraceID(_ header: String) {
        let buffer = AccessLogBuffer()
        AccessLogText.appendTraceID(header, to: buffer)
        let direct = Array(buffer.bytes)
        var general: [UInt8] = []
        if let id = AccessLogRecord.traceID(header) {
            general.append(contentsOf: #","traceID":"#.utf8)
            Problem.appendQuoted(id, to: &general)
        }
        #expect(direct == general)
    }

    // MARK: Dates

    static func text(_ times: [WallTime], milliseconds: Bool) -> [String] {
        var cache = SecondText()
        return times.map { t in
            let out = AccessLogBuffer()
            cache.append(t, milliseconds: milliseconds, to: out)
            return String(decoding: out.bytes, as: UTF8.self)
        }
    }

    /// One cache through a second, a day, a month, a leap day and a year ending, before 1970
    /// and after 9999: each text is `RFC3339`'s for that instant.
    @Test func datesAcrossSecondDayAndYearBoundaries() {
        let seconds = [
            946_684_799, 946_684_799, 946_684_800, 946_684_800, 946_684_801,  // 1999-12-31T23:59:59 → 2000
            1_709_164_799, 1_709_164_800, 1_709_251_199, 1_709_251_200,  // 2024-02-28 → 29 → 03-01
            1_795_000_000, 1_795_000_000, 1_795_000_001, 1_794_999_999,  // back in time too
            -1, 0, 253_402_300_799, 253_402_300_800,  // 1969, 1970, 9999-12-31T23:59:59, year 10000
        ]
        let nanos = [999_999_999, 0, 1_000_000, 500_000_000, 999_000_000, 7_000_000]
        let times = seconds.enumerated().map { WallTime(seconds: $1, nanoseconds: nanos[$0 % nanos.count]) }
        for (t, s) in zip(times, Self.text(times, milliseconds: false)) {
            #expect(s == RFC3339.format(Date(timeIntervalSince1970: Double(t.seconds))))
        }
        for (t, s) in zip(times, Self.text(times, milliseconds: true)) {
            let whole = RFC3339.format(Date(timeIntervalSince1970: Double(t.seconds)))
            let ms = String(t.nanoseconds / 1_000_000 + 1_000).dropFirst()
            #expect(s == whole.dropLast() + "." + ms + "Z")
            // Where the Double holds the instant exactly, RFC3339 itself agrees.
            if t.nanoseconds % 1_000_000 == 0 && t.nanoseconds / 1_000_000 % 125 == 0 {
                #expect(s == RFC3339.format(t.date, milliseconds: true))
            }
        }
        #expect(
            Self.text([WallTime(seconds: 946_684_799, nanoseconds: 999_999_999)], milliseconds: true) == [
                "1999-12-31T23:59:59.999Z"
            ])
        #expect(Self.text([WallTime(seconds: -1, nanoseconds: 500_000_000)], milliseconds: true) == ["1969-12-31T23:59:59.500Z"])
        #expect(
            Self.text([WallTime(seconds: 1_709_164_800, nanoseconds: 1_000_000)], milliseconds: true) == [
                "2024-02-29T00:00:00.001Z"
            ])
    }

    // MARK: The buffer

    @Test func numbersAreWrittenAsStringSpellsThem() {
        var values: [Int] = [0, 1, 9, 10, 11, 99, 100, 101, -1, -9, -10, Int.max, Int.min, Int.max - 1, Int.min + 1]
        var p = 1
        for _ in 0..<18 {
            p *= 10
            values += [p - 1, p, p + 1, -p]
        }
        let out = AccessLogBuffer(capacity: 1)
        for v in values {
            out.removeAll()
            out.appendDecimal(v)
            #expect(String(decoding: out.bytes, as: UTF8.self) == String(v))
        }
        for v: UInt64 in [0, 7, 10_000_000_000_000_000_000, UInt64.max, UInt64.max - 1, 9_999_999_999_999_999_999] {
            out.removeAll()
            out.appendDecimal(v)
            #expect(String(decoding: out.bytes, as: UTF8.self) == String(v))
        }
    }

    @Test func theBufferGrowsAndKeepsWhatItHas() {
        let out = AccessLogBuffer(capacity: 16)
        var expected: [UInt8] = []
        for i in 0..<2_000 {
            let piece = "piece \(i);"
            out.appendUTF8(piece)
            out.append(UInt8(ascii: "|"))
            expected += Array(piece.utf8) + [UInt8(ascii: "|")]
        }
        #expect(Array(out.bytes) == expected)
        out.removeAll()
        out.append("again" as StaticString)
        #expect(Array(out.bytes) == Array("again".utf8))
    }

    @Test func wallTimeNormalisesItsNanoseconds() {
        #expect(WallTime(seconds: 10, nanoseconds: -1) == WallTime(seconds: 9, nanoseconds: 999_999_999))
        #expect(WallTime(seconds: 10, nanoseconds: 2_500_000_000) == WallTime(seconds: 12, nanoseconds: 500_000_000))
        let now = WallTime.now
        #expect((0..<1_000_000_000).contains(now.nanoseconds))
        #expect(abs(now.date.timeIntervalSinceNow) < 60)
    }
}
