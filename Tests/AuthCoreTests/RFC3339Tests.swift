import Foundation
import Testing

@testable import AuthCore

/// RFC 3339 text written without Foundation's formatter is the text Foundation writes (from
/// the Gregorian reform on).
@Suite struct RFC3339Tests {
    @Test func theTextIsFoundationsWithAndWithoutMilliseconds() {
        var dates = [
            0, -1, 784_111_777.5, 1_795_000_000.999, 1_795_000_000.0005, 951_782_400, 4_107_542_400, -12_219_292_800,
            253_402_300_799.9,
        ].map(Date.init(timeIntervalSince1970:))
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            dates.append(Date(timeIntervalSince1970: Double(seed >> 11) / Double(1 << 53) * 8_000_000_000 - 4_000_000_000))
        }
        for date in dates {
            #expect(RFC3339.format(date) == date.formatted(.iso8601), "\(date.timeIntervalSince1970)")
            #expect(
                RFC3339.format(date, milliseconds: true)
                    == date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
                "\(date.timeIntervalSince1970)")
        }
    }

    @Test func datesBeforeTheGregorianReformAreProlepticGregorianAsRFC3339Says() {
        // Foundation's calendar is Julian before 1582-10-15 and writes 0001-01-03 here.
        #expect(RFC3339.format(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -12_219_292_800)) == "1582-10-15T00:00:00Z")
    }

    @Test func appendWritesTheSameBytes() {
        var bytes = Array("at ".utf8)
        RFC3339.append(Date(timeIntervalSince1970: 784_111_777.25), milliseconds: true, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "at 1994-11-06T08:49:37.250Z")
    }
}
