import AuthCore
import Foundation
import HTTPWire

/// JSON documents of the admin API. None contains a token.
enum AdminJSON {
    /// 9999-12-31T23:59:59Z and 0001-01-01T00:00:00Z: the range an RFC 3339 date-time can write.
    static let latestDate = Date(timeIntervalSince1970: 253_402_300_799)
    static let earliestDate = Date(timeIntervalSince1970: -62_135_596_800)

    /// An RFC 3339 date-time, or null. A date outside years 1–9999 (an imported token whose
    /// `exp` is absurdly far away, say) is written as the nearest end of that range.
    static func date(_ d: Date?) -> String {
        guard let d, d.timeIntervalSince1970.isFinite else { return "null" }
        return Problem.quote(min(max(d, earliestDate), latestDate).formatted(.iso8601))
    }

    static func string(_ s: String?) -> String { s.map(Problem.quote) ?? "null" }

    /// The session document (`GET /auth/session`); `registration` (what the user-info call
    /// said) is there only when it is known to apply to this session.
    static func session(_ s: SessionStatus, registration: UserInfoProbe.Registration? = nil) -> String {
        let state = s.isLoggedIn ? "logged_in" : (s.isGuest ? "guest" : "logged_out")
        let extra = registration.map { s.isLoggedIn ? ",\"registration\":\"\($0.rawValue)\"" : "" } ?? ""
        return
            "{\"account\":\(Problem.quote(s.account.rawValue)),\"state\":\"\(state)\",\"subject\":\(string(s.subject)),\"expires_at\":\(date(s.expiresAt)),\"generation\":\(s.generation.map { String($0.rawValue) } ?? "null"),\"last_login\":\(date(s.lastLogin)),\"guest\":\(s.isGuest),\"epoch\":\(s.epoch)\(extra)}"
    }

    /// One event as the `data:` of an SSE message.
    static func event(_ r: AuthEventRecord) -> String {
        var fields = "\"id\":\(r.id),\"type\":\"\(r.event.name)\",\"at\":\(date(r.timestamp))"
        switch r.event {
        case .state(let s), .restored(let s), .loggedIn(let s):
            fields += ",\"session\":\(session(s))"
        case .refreshed(let g, let persisted):
            fields += ",\"generation\":\(g.rawValue),\"persisted\":\(persisted)"
        case .refreshFailed(let code, let retryAfter):
            fields += ",\"code\":\(Problem.quote(code)),\"retry_after_seconds\":\(retryAfter.components.seconds)"
        case .loggedOut(let reason, let epoch):
            fields += ",\"reason\":\(Problem.quote(reason.code)),\"detail\":\(Problem.quote(reason.description)),\"epoch\":\(epoch)"
        }
        return "{\(fields)}"
    }

    /// The problem for a refused or failed login.
    static func loginFailure(_ e: TokenEndpointError) -> Problem {
        if e.code == .invalidTokenSyntax, let field = e.field {
            return GatewayProblem.make(
                "authorization-server-unavailable", 502,
                "the authorization server answered with an unusable \(field) (\(TokenSyntax.requirement(for: field))); "
                    + "the login was not completed", [("field", Problem.quote(field))])
        }
        switch e.disposition {
        case .terminal:
            let code = e.oauthError?.error ?? "rejected"
            return GatewayProblem.make(
                "login-rejected", 401, "the authorization server refused the login (\(code))", [("error", Problem.quote(code))])
        default:
            return GatewayProblem.make(
                "authorization-server-unavailable", 502, "the authorization server could not be reached or failed; try again")
        }
    }
}
