internal import Foundation

/// Parses `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date in any of its
/// three forms (``HTTPDate``).
enum RetryAfter {
    /// The delay `value` asks for at `now`; `nil` when unparseable. Past dates give zero.
    static func parse(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) {
            return seconds >= 0 ? .seconds(seconds) : nil
        }
        guard let date = HTTPDate.parse(trimmed, now: now) else { return nil }
        let delta = date.timeIntervalSince(now)
        return delta > 0 ? .interval(delta) : .zero
    }
}
