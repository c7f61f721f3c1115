import Foundation
import Testing

@testable import AuthCore

/// HTTP-dates in the three forms RFC 9110 §5.6.7 asks recipients to read.
@Suite struct HTTPDateTests {
    /// RFC 9110's own example: Sun, 06 Nov 1994 08:49:37 GMT.
    static let example = Date(timeIntervalSince1970: 784_111_777)
    static let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
        "Sun Nov  6 08:49:37 1994",  // asctime
        "Sun Nov 06 08:49:37 1994",
    ])
    func eachFormReadsTheSameInstant(_ text: String) {
        #expect(HTTPDate.parse(text, now: Self.now) == Self.example)
    }

    @Test(arguments: [
        "", "GMT", "06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 gmt",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 29 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1994 08:49:3x GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sunday, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT", "Funday, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 94", "Sun Nov 106 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT extra", "+3", "1994-11-06T08:49:37Z",
    ])
    func anythingElseIsNoDate(_ text: String) {
        #expect(HTTPDate.parse(text, now: Self.now) == nil, "\(text)")
    }

    @Test func aLeapYearHasItsTwentyNinthOfFebruaryAndALeapSecondReadsAsTheMinutesLast() {
        #expect(HTTPDate.parse("Tue, 29 Feb 2028 00:00:00 GMT") == Date(timeIntervalSince1970: 1_835_395_200))
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == Date(timeIntervalSince1970: 1_483_228_799))
        #expect(HTTPDate.parse("Mon, 29 Feb 2100 00:00:00 GMT") == nil, "2100 is no leap year")
    }

    @Test func aTwoDigitYearMoreThanFiftyYearsAheadIsTheLastCenturys() {
        // From 2026: 76 → 2076 (50 years ahead), 77 → 1977, 26 → 2026.
        let at = { (yy: String) in HTTPDate.parse("Monday, 01-Jan-\(yy) 00:00:00 GMT", now: Self.now).map(HTTPDate.format) }
        #expect(at("76") == "Wed, 01 Jan 2076 00:00:00 GMT")
        #expect(at("77") == "Sat, 01 Jan 1977 00:00:00 GMT")
        #expect(at("26") == "Thu, 01 Jan 2026 00:00:00 GMT")
    }

    @Test func formatWritesTheIMFFixdateAndReadsBack() {
        #expect(HTTPDate.format(Self.example) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 GMT")
        for seconds in stride(from: -86_400 * 365 * 80, through: 86_400 * 365 * 80, by: 7_777_777) {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date, "\(seconds)")
        }
    }

    @Test func retryAfterTakesEveryForm() {
        let now = Self.example.addingTimeInterval(-30)
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(RetryAfter.parse(text, now: now) == .seconds(30), "\(text)")
        }
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: Self.example.addingTimeInterval(5)) == .zero)
        #expect(RetryAfter.parse("soon", now: now) == nil)
    }
}
