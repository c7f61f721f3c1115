/// Proleptic Gregorian calendar arithmetic on days since 1970-01-01 (H. Hinnant's
/// `days_from_civil` and `civil_from_days`), for the date formats written and read here
/// without Foundation's formatters (``HTTPDate``, ``RFC3339``).
enum CivilDate {
    /// Days since 1970-01-01 of `year`-`month`-`day`.
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date of day `z0` since 1970-01-01.
    static func civil(fromDays z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The number of days in `month` of `year`.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Whole seconds since 1970 split into days and the second of that day (0..<86,400),
    /// flooring for instants before 1970.
    static func split(_ seconds: Int) -> (days: Int, second: Int) {
        let (days, second) = seconds.quotientAndRemainder(dividingBy: 86_400)
        return second < 0 ? (days - 1, second + 86_400) : (days, second)
    }
}
