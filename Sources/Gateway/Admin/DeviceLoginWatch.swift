import Foundation

/// What `authgate login --grant device` makes of the admin API's answers (pure): the
/// instructions for the person from the `202` answer, and from each event whether the
/// device login is still waiting, logged the session in, or ended.
public enum DeviceLoginWatch {
    /// Where a device login stands after an event.
    public enum Verdict: Sendable, Equatable {
        /// Still waiting for the person.
        case waiting
        /// The session logged in; a summary of it.
        case loggedIn(String)
        /// The device login ended without logging in: the reason, with its sentence.
        case failed(String)
    }

    /// The lines a person reads (where to go, what to type, until when) from the `202`
    /// answer's JSON, and the seconds the codes live; nil when it is not such a document.
    public static func instructions(_ json: String) -> (text: String, expiresIn: Int64)? {
        guard let d = try? JSONDecoder().decode(DeviceAuthorizationDocument.self, from: Data(json.utf8)) else { return nil }
        return (d.instructions, d.expiresIn ?? 0)
    }

    /// The verdict of an event (its SSE `event` name and `data`) received after the login
    /// started.
    public static func verdict(event: String, data: String) -> Verdict {
        let p = AdminEventPayload.decode(data)
        switch p?.type ?? event {
        case "logged_in":
            return .loggedIn(p?.session.map { EventLine.describe($0, leavingOutState: true) } ?? "")
        case "device_login_ended":
            var reason = p?.reason ?? "unknown"
            if let detail = p?.detail, detail != reason { reason += " (\(detail))" }
            return .failed(reason)
        default:
            return .waiting
        }
    }
}
