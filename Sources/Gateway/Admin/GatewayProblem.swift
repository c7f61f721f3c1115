public import AuthCore
public import HTTPWire

/// The problem documents the gateway answers with, one place for all of them.
public enum GatewayProblem {
    static func make(_ code: String, _ status: Int, _ detail: String, _ extensions: [(String, String)] = []) -> Problem {
        Problem(
            type: "https://authgate.dev/problems/\(code)", title: ResponseHead.reason(for: status), status: status,
            detail: detail, extensions: extensions)
    }

    /// No route matches the request path.
    public static let noRoute = make("no-route", 404, "no route matches this path")
    /// The route is authenticated and the proxy has no sessions at all.
    static let noSessionConfigured = make(
        "no-session-configured", 500, "this route requires authentication but no session is configured")
    /// The route is authenticated and the session it names is not configured.
    static let sessionNotConfigured = make("no-session-configured", 500, "this route's session is not configured")
    /// The route names its callers (`routes[].callers`) and this one is not among them:
    /// nothing was sent upstream.
    public static let callerNotAllowed = make(
        "caller-not-allowed", 403,
        "this route serves only the callers its configuration names (routes[].callers), and this connection's peer is not one")
    /// A request waited its route's `queueTimeoutSeconds` for a slot at the upstream.
    public static let upstreamBusy = make(
        "upstream-busy", 503, "the route's upstream is at its in-flight limit and no slot came in time; retry later")
    /// A request would have waited longer than its route's `queueTimeoutSeconds` for a slot
    /// at the upstream, by the queue's length and recent latency: answered at once.
    public static let upstreamBusyAtOnce = make(
        "upstream-busy", 503,
        "the route's upstream is at its in-flight limit and the queue for it is longer than the route's queueTimeoutSeconds; retry after the time Retry-After gives"
    )

    /// An authenticated route with no session (SEEDS row 10): nothing was sent upstream.
    public static let loginRequired = make(
        "login-required", 401, "this route needs a session and there is none; log in through the admin API (POST /auth/login)")

    /// The challenge on every 401 about the session (as RFC 9110 §15.5.2 asks of a 401).
    /// Its scheme is AuthGate's own, so a client can tell "log in through the admin API"
    /// from the admin listener's `Bearer realm="authgate-admin"` (a wrong admin token).
    public static let sessionChallenge = #"AuthGate realm="authgate""#

    /// The response for an ``AuthCore/AuthError`` met while serving a request, and any extra headers.
    public static func forAuthError(_ error: AuthError) -> (Problem, HTTPHeaders) {
        let (problem, headers) = problemAndHeaders(error)
        return (problem, withChallenge(problem, headers))
    }

    /// `headers`, plus ``sessionChallenge`` when `problem` is a 401.
    static func withChallenge(_ problem: Problem, _ headers: HTTPHeaders = HTTPHeaders()) -> HTTPHeaders {
        guard problem.status == 401 else { return headers }
        var h = headers
        h.add(name: "WWW-Authenticate", value: sessionChallenge)
        return h
    }

    private static func problemAndHeaders(_ error: AuthError) -> (Problem, HTTPHeaders) {
        var headers = HTTPHeaders()
        func retryAfter() -> Int {
            let seconds = Int((error.retryAfter ?? .seconds(1)).components.seconds)
            let rounded = max(1, seconds)
            headers.add(name: "Retry-After", value: String(rounded))
            return rounded
        }
        switch error.code {
        case .loginRequired:
            return (loginRequired, headers)
        case .sessionEnded:
            let reason = error.logoutReason?.code ?? "unknown"
            return (
                make(
                    "session-ended", 401,
                    "the session ended (\(reason)); log in again through the admin API (POST /auth/login)",
                    [("reason", Problem.quote(reason))]), headers
            )
        case .refreshFailed, .backingOff:
            let s = retryAfter()
            let storeFailed = error.underlyingAuthError?.code.domain == .store
            let detail =
                storeFailed
                ? "the token store could not be reached to coordinate the refresh; the session is kept, retry in \(s) s"
                : "the authorization server could not refresh the token just now; the session is kept, retry in \(s) s"
            return (
                make(
                    "refresh-unavailable", 503, detail,
                    [("cause", Problem.quote(storeFailed ? "token-store" : "authorization-server"))]),
                headers
            )
        case .excessiveRefresh:
            _ = retryAfter()
            return (
                make(
                    "excessive-refresh", 503,
                    "the upstream rejected every fresh token; refreshing is paused to avoid a refresh loop"), headers
            )
        case .clientCertificateOutdated:
            let s = retryAfter()
            return (
                make(
                    "client-certificate-outdated", 503,
                    "the session's tokens are bound to a newer client certificate than this replica's (another "
                        + "replica renewed it): this replica does not refresh them back to its own; renew its "
                        + "certificate files, retry in \(s) s or on another replica"), headers
            )
        case .refreshNotPossible:
            return (make("refresh-not-possible", 401, "the token expired and the session cannot renew it; log in again"), headers)
        case .loginFailed:
            return (make("login-failed", 401, "the login was refused"), headers)
        case .deviceLoginPending:
            return (
                make(
                    "device-login-pending", 409,
                    "a device login is already waiting for approval; finish it, or cancel it with POST /auth/logout"),
                headers
            )
        case .refreshReentered:
            return (make("refresh-reentered", 500, "the token request itself asked for a token; check the transport"), headers)
        default:
            // `auth.storage`, and any error of another domain that reached the gateway as is.
            return (make("token-store-failed", 500, "the token store failed; see the AuthGate log"), headers)
        }
    }
}
