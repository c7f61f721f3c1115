import Foundation

/// One line of `authgate events` for a person: when, which session, what happened, with
/// what the event carries (never a token; the events hold none). Pure.
///
/// ```
/// 2026-11-23T21:39:58Z [default] state: logged_out
/// 2026-11-23T21:40:00Z [default] logged_in: as alice, token generation 1, expires 2026-11-23T22:40:00Z
/// 2026-11-23T21:50:00Z [default] refreshed: token generation 2
/// 2026-11-23T21:55:00Z [default] logged_out: refresh_rejected (refresh_rejected(invalid_grant)), epoch 1
/// ```
public enum EventLine {
    /// The line for an SSE message of `session`'s stream; a message whose data is not an
    /// event document is shown as it came.
    public static func format(event: String, data: String, session: String) -> String {
        guard let p = AdminEventPayload.decode(data) else { return "[\(session)] \(event): \(data)" }
        let type = p.type ?? event
        var line = "\(p.at ?? "-") [\(session)] \(type)"
        switch type {
        case "state", "restored":
            line += p.session.map { ": " + describe($0) } ?? ""
        case "logged_in":
            line += p.session.map { ": " + describe($0, leavingOutState: true) } ?? ""
        case "refreshed":
            line += ": token generation \(p.generation.map(String.init) ?? "?")"
            if p.persisted == false { line += " (held in memory only: saving it failed)" }
        case "refresh_failed":
            line += ": \(p.code ?? "unknown")"
            if let s = p.retryAfterSeconds, s > 0 { line += ", next try in \(s) s" }
        case "logged_out":
            line += ": \(p.reason ?? "unknown")"
            if let detail = p.detail, detail != p.reason { line += " (\(detail))" }
            if let epoch = p.epoch { line += ", epoch \(epoch)" }
        case "device_authorization":
            if let d = p.deviceAuthorization {
                line += ": enter \(d.userCode) at \(d.verificationURI)"
                if let e = d.expiresAt { line += ", expires \(e)" }
            }
        case "device_login_ended":
            line += ": \(p.reason ?? "unknown")"
            if let detail = p.detail, detail != p.reason { line += " (\(detail))" }
        default:
            line += ": \(data)"
        }
        return line
    }

    /// `logged_in as alice, token generation 3, expires …`: a session document in a few words
    /// (without the state for a `logged_in` event, whose name says it).
    static func describe(_ s: AdminEventPayload.Session, leavingOutState: Bool = false) -> String {
        var parts: [String] = []
        var state = leavingOutState ? "" : (s.state ?? "unknown")
        if let subject = s.subject, s.state == "logged_in" { state += state.isEmpty ? "as \(subject)" : " as \(subject)" }
        if !state.isEmpty { parts.append(state) }
        if let g = s.generation { parts.append("token generation \(g)") }
        if let e = s.expiresAt { parts.append("expires \(e)") }
        if let r = s.registration { parts.append("registration \(r)") }
        return parts.joined(separator: ", ")
    }
}
