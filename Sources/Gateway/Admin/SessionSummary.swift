public import Foundation

/// What `authgate status` prints for a person: a session document in a few lines. Pure.
///
/// ```
/// session default: logged in as alice
///   token:      generation 3, expires 2026-11-23T22:40:00Z (in 59 min)
///   last login: 2026-11-23T21:40:00Z
///   epoch:      1
///   store:      postgres, replica b/2/9; refreshing now: a/1/7 (2.5 s left)
/// ```
public enum SessionSummary {
    /// The summary of the session document `json`, with times relative to `now`; nil when
    /// `json` is not a session document.
    public static func format(_ json: String, now: Date) -> String? {
        guard let s = AdminEventPayload.decodeSession(json), let state = s.state else { return nil }
        let name = s.account ?? "?"
        var lines: [String] = []
        switch state {
        case "logged_in":
            lines.append("session \(name): logged in" + (s.subject.map { " as \($0)" } ?? ""))
        case "guest":
            lines.append("session \(name): guest (public routes only; authenticated routes answer 401)")
        case "logged_out":
            lines.append("session \(name): logged out")
        default:
            lines.append("session \(name): \(state)")
        }
        if state == "logged_in" {
            var token = "generation \(s.generation.map(String.init) ?? "?")"
            if let e = s.expiresAt {
                token += ", expires \(e)"
                if let date = try? Date(e, strategy: .iso8601) { token += " (\(relative(date, now: now)))" }
            }
            lines.append("  token:      \(token)")
            if let t = s.issuedTokenType { lines.append("  exchanged:  issued as \(t)") }
            if let r = s.registration { lines.append("  user info:  \(r)") }
        }
        if let d = s.deviceAuthorization {
            lines.append("  device login waiting: enter \(d.userCode) at \(d.verificationURI)")
            if let e = d.expiresAt { lines.append("    code expires \(e)") }
        }
        if let l = s.lastLogin { lines.append("  last login: \(l)") }
        if let epoch = s.epoch { lines.append("  epoch:      \(epoch)") }
        if let store = s.store { lines.append("  store:      \(store.summary)") }
        return lines.joined(separator: "\n")
    }

    /// `in 5 min`, `2 h ago`, `now`.
    static func relative(_ date: Date, now: Date) -> String {
        let seconds = Int(date.timeIntervalSince(now).rounded())
        let magnitude = abs(seconds)
        let amount: String
        switch magnitude {
        case 0: return "now"
        case 1..<120: amount = "\(magnitude) s"
        case 120..<7200: amount = "\(magnitude / 60) min"
        case 7200..<172_800: amount = "\(magnitude / 3600) h"
        default: amount = "\(magnitude / 86400) days"
        }
        return seconds > 0 ? "in \(amount)" : "\(amount) ago"
    }
}
