public import Foundation

/// HTTP-dates (RFC 9110 §5.6.7), read in all three forms a recipient must accept and written
/// in the preferred one. Pure: no formatter, locale or time zone database.
///
/// - IMF-fixdate, the preferred form: `Sun, 06 Nov 1994 08:49:37 GMT`
/// - the obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more
///   than 50 years ahead of `now` is the most recent past year with those digits
/// - ANSI C's asctime form: `Sun Nov  6 08:49:37 1994`
///
/// The day name must be a day name of its form; like most recipients, it is not checked
/// against the date.
public enum HTTPDate {
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date `value` names, or nil when it is none of the three forms (or names no real
    /// day, such as 31 February). `now` resolves the RFC 850 form's two-digit year.
    public static func parse(_ value: some StringProtocol, now: Date = Date()) -> Date? {
        let fields = String(value).split(separator: " " as Character, omittingEmptySubsequences: true).map(String.init)
        if fields.count == 6, fields[0].hasSuffix(","), days.contains(String(fields[0].dropLast())), fields[5] == "GMT",
            fields[1].count == 2, fields[3].count == 4
        {
            return make(year: fields[3], month: fields[2], day: fields[1], time: fields[4])
        }
        if fields.count == 4, fields[0].hasSuffix(","), longDays.contains(String(fields[0].dropLast())), fields[3] == "GMT" {
            let date = fields[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard date.count == 3, date[0].count == 2, date[2].count == 2, let yy = Int(date[2]), yy >= 0 else { return nil }
            let thisYear = CivilDate.civil(fromDays: CivilDate.split(Int(now.timeIntervalSince1970.rounded(.down))).days).year
            var year = thisYear - thisYear % 100 + yy
            if year > thisYear + 50 { year -= 100 }
            return make(year: String(year), month: date[1], day: date[0], time: fields[2])
        }
        if fields.count == 5, days.contains(fields[0]), (1...2).contains(fields[2].count), fields[4].count == 4 {
            // asctime pads a one-digit day with a space: "Nov  6" (split above drops it).
            return make(year: fields[4], month: fields[1], day: fields[2], time: fields[3])
        }
        return nil
    }

    /// `date` as an IMF-fixdate, whole seconds (the fraction dropped).
    public static func format(_ date: Date) -> String {
        let (days, s) = CivilDate.split(Int(date.timeIntervalSince1970.rounded(.down)))
        let (year, month, day) = CivilDate.civil(fromDays: days)
        // 1970-01-01 was a Thursday (index 3 from Monday).
        let weekday = ((days % 7) + 7 + 3) % 7
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return
            "\(self.days[weekday]), \(two(day)) \(months[month - 1]) \(year) \(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60)) GMT"
    }

    private static func make(year: String, month: String, day: String, time: String) -> Date? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard let y = digits(year), let m = months.firstIndex(of: month).map({ $0 + 1 }), let d = digits(day),
            clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
            let hour = digits(clock[0]), let minute = digits(clock[1]), let second = digits(clock[2]),
            hour < 24, minute < 60, second <= 60, d >= 1, d <= CivilDate.daysIn(month: m, year: y)
        else { return nil }
        // A leap second (60) reads as the last second of its minute.
        let total = CivilDate.days(year: y, month: m, day: d) * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
        return Date(timeIntervalSince1970: TimeInterval(total))
    }

    private static func digits(_ s: some StringProtocol) -> Int? {
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(s)
    }
}
