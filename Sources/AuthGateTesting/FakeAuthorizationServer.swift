public import AuthCore
internal import Foundation

/// An in-process OAuth 2 authorization server for tests, the benchmark and `authgate dev`.
///
/// It implements ``HTTPTransport`` directly (no sockets); its logic is ``handle(_:)``, a
/// pure request → response function, so it can later be served over real HTTP.
///
/// It issues opaque or JWT-shaped tokens with a configurable lifetime on the injected
/// clock, rotates refresh tokens, detects reuse of a rotated refresh token (revoking the
/// whole token family) with an optional grace window, and counts what happened. Failures
/// can be injected into refresh requests. ``Profile/headerToken`` serves the SEEDS.md row 7
/// shape instead of RFC 6749.
public actor FakeAuthorizationServer: HTTPTransport {
    /// Which protocol the server speaks.
    public enum Profile: Sendable, Equatable {
        /// RFC 6749 at any path ending in `/token`: form bodies, JSON answers, §5.2 errors.
        case standard
        /// SEEDS.md row 7: `POST …/auth/login` with a JSON body `{username, password}`;
        /// `POST …/auth/refresh` with the (expired) access token as `Bearer` and a JSON body
        /// `{refreshToken}`. Answers carry the access token (a JWT with `exp`) in the
        /// `Authorization` response header and `{"data": {"refreshToken": …}}` in the body;
        /// errors are 401 with `{"code": …, "message": …}` (not OAuth).
        case headerToken
    }

    /// The shape of issued access tokens.
    public enum TokenFormat: Sendable, Equatable {
        /// Random opaque strings.
        case opaque
        /// Unsigned-looking JWTs carrying `sub`, `iat`, `exp`, `jti`.
        case jwt
    }

    /// What the server does.
    public struct Configuration: Sendable {
        /// The protocol.
        public var profile: Profile = .standard
        /// Access token lifetime.
        public var accessTokenLifetime: Duration = .seconds(3600)
        /// Access token format.
        public var tokenFormat: TokenFormat = .opaque
        /// Whether answers carry `expires_in` (without it, clients must read the JWT `exp`).
        public var sendsExpiresIn = true
        /// Whether each refresh issues a new refresh token.
        public var rotatesRefreshTokens = true
        /// Whether presenting a rotated refresh token revokes its whole family.
        public var reuseDetection = true
        /// Whether a rotation revokes the access tokens issued before it in the family, at
        /// once (RFC 9700 allows it, and several widely used servers do it by default): a
        /// request still in flight with the previous token is then rejected.
        public var revokesPreviousAccessTokens = false
        /// A rotated refresh token presented within this time after its rotation is answered
        /// with the family's current refresh token instead of being treated as reuse.
        public var reuseGraceWindow: Duration?
        /// Delay before answering any request (on the injected clock).
        public var latency: Duration = .zero
        /// Confidential clients: id → secret. Empty: no client authentication required.
        public var clients: [String: String] = ["authgate": "s3cret"]
        /// Clients that authenticate with `private_key_jwt` (RFC 7523 §2.2): id → the public
        /// keys registered for it. A client in ``clients`` may also use `client_secret_jwt`.
        public var assertionKeys: [String: [ClientAssertionVerifier.Key]] = [:]
        /// The issuer identifier, which an assertion's `aud` may name besides the token
        /// endpoint's URL.
        public var issuer: String?
        /// Issuers whose JWTs the JWT bearer grant (RFC 7523 §2.1) and token exchange
        /// (RFC 8693, subject token type `jwt`) accept: `iss` → the keys their signatures
        /// verify with. The JWT's `sub` becomes the subject of the issued tokens.
        public var trustedJWTIssuers: [String: [ClientAssertionVerifier.Key]] = [:]
        /// The `audience` and `resource` values a token exchange may name; any other is
        /// `invalid_target` (RFC 8693 §2.2.2). Empty: none may be named.
        public var exchangeTargets: Set<String> = []
        /// Whether the JWT bearer grant and token exchange issue a refresh token (servers
        /// rarely do: the client presents its assertion again).
        public var grantsIssueRefreshTokens = false
        /// Users for the password grant: name → password.
        public var users: [String: String] = ["alice": "wonderland"]
        /// Whether token answers also carry an OpenID Connect `id_token` (a JWT-shaped
        /// string naming the subject and the client), as an OpenID provider's do.
        public var issuesIDTokens = false
        /// How long a device code and its user code live (RFC 8628 §3.2 `expires_in`).
        public var deviceCodeLifetime: Duration = .seconds(600)
        /// The polling interval a device authorization names (§3.2 `interval`); a poll
        /// sooner than this after the previous one is answered `slow_down`, and the
        /// interval of that code grows by 5 s (§3.5).
        public var deviceInterval: Duration = .seconds(5)
        /// The interval the device authorization answer names, when it differs from the one
        /// enforced (nil: the same): a server that asks for less than it then accepts.
        public var deviceIntervalAdvertised: Duration?

        /// Creates the default configuration.
        public init() {}
    }

    /// A failure injected into the next refresh request.
    public enum Failure: Sendable, Equatable {
        /// Processes the request (rotating the refresh token) and then drops the answer:
        /// the client sees a lost connection.
        case dropAnswerAfterCommit
        /// The connection fails before anything is processed.
        case networkError
        /// An HTTP error status with a plain-text body.
        case serverError(status: Int)
        /// 429 with `Retry-After: seconds`.
        case tooManyRequests(retryAfterSeconds: Int)
        /// 400 `invalid_grant`.
        case invalidGrant
        /// A status with an HTML body (a proxy's error page).
        case nonOAuthBody(status: Int)
        /// Answers normally after an extra delay on the injected clock.
        case slow(Duration)
        /// Processes the request at once (rotating the refresh token), then holds the answer
        /// for a delay on the injected clock: the client learns late what already happened.
        case answerLateAfterCommit(Duration)
    }

    /// What happened so far.
    public struct Counters: Sendable, Equatable {
        /// Requests received.
        public var requests = 0
        /// Successful grants by `grant_type` (row-7 profile: `password`, `refresh_token`).
        public var grants: [String: Int] = [:]
        /// Refresh requests received (successful or not).
        public var refreshAttempts = 0
        /// Rotated refresh tokens presented after their grace window (families revoked).
        public var reuseDetections = 0
        /// Rotated refresh tokens accepted inside the grace window.
        public var graceReuses = 0
        /// Failures injected.
        public var injectedFailures = 0
        /// Token families ended by a revocation request (RFC 7009).
        public var revocations = 0
        /// Client assertions accepted.
        public var clientAssertions = 0
        /// Client assertions refused, by reason, in order.
        public var assertionRefusals: [ClientAssertionVerifier.Refusal] = []
        /// DPoP proofs accepted at the token endpoint.
        public var dpopProofs = 0
        /// DPoP proofs refused, by reason, in order (``DPoPVerifier/Refusal/nonceNeeded``
        /// included: the `use_dpop_nonce` answers).
        public var dpopRefusals: [DPoPVerifier.Refusal] = []
        /// What the JWT bearer grant and token exchange refused, in order (the
        /// `error_description` of each refusal).
        public var grantRefusals: [String] = []
        /// The body fields of the last token exchange request as `name=value`, in the order
        /// sent, a repeated field once per value (the value of `subject_token` and
        /// `actor_token` replaced by `<redacted>`), for tests of what the client sends.
        public var lastExchangeFields: [String] = []

        /// Device authorization requests answered (RFC 8628 §3.2).
        public var deviceAuthorizations = 0
        /// Device access token requests (polls), whatever their answer.
        public var devicePolls = 0
        /// Polls answered `slow_down`.
        public var slowDowns = 0
        /// Successful refreshes.
        public var refreshes: Int { grants["refresh_token", default: 0] }
    }

    /// Every secret the server has handed out, oldest first: what must never appear in a
    /// client's logs, answers or files in the clear.
    public struct IssuedSecrets: Sendable, Equatable {
        /// Access tokens, from every grant and refresh.
        public var accessTokens: [String] = []
        /// Refresh tokens, including rotated ones.
        public var refreshTokens: [String] = []
        /// ID tokens (with ``Configuration/issuesIDTokens``).
        public var idTokens: [String] = []

        /// Device codes (RFC 8628), secrets as much as a refresh token is.
        public var deviceCodes: [String] = []

        /// All of them.
        public var all: [String] { accessTokens + refreshTokens + idTokens + deviceCodes }
    }

    struct Family {
        let subject: String
        let clientID: String?
        let scope: String?
        var currentRefreshToken: String
        var retired: [String: MonotonicInstant] = [:]
        var revoked = false
        /// Access tokens issued in this family, oldest first.
        var accessTokens: [String] = []
        /// The thumbprint of the DPoP key the family was issued to (RFC 9449 §5): its refresh
        /// needs a proof of the same key.
        var jkt: String?
    }

    struct AuthorizationCode {
        let subject: String
        let clientID: String?
        let redirectURI: String?
        let challenge: String?
    }

    let configuration: Configuration
    let clock: any AuthClock
    var counters = Counters()
    var issued = IssuedSecrets()
    var families: [Int: Family] = [:]
    var refreshIndex: [String: Int] = [:]
    var accessIndex: [String: (family: Int, deadline: MonotonicInstant)] = [:]
    var codes: [String: AuthorizationCode] = [:]
    var failures: [Failure] = []
    var holding = false
    var held: [CheckedContinuation<Void, Never>] = []
    var random = SystemRandomNumberGenerator()
    /// Every `jti` of an accepted client assertion: a second use is refused.
    var assertionIDs: Set<String> = []
    /// Every `jti` of a DPoP proof seen at the token endpoint.
    var dpopIDs: Set<String> = []
    /// The nonce DPoP proofs must carry (RFC 9449 §8), when the server asks for one.
    var dpopNonce: String?
    /// How far this server's clock is from the shared one, for the `iat` of DPoP proofs.
    var dpopClockOffset: Double = 0
    /// The DPoP key thumbprint each bound access token was issued to.
    var accessBindings: [String: String] = [:]
    /// Every `jti` of an accepted JWT bearer grant assertion: a second use is refused.
    var grantAssertionIDs: Set<String> = []
    /// The device authorizations issued (RFC 8628), by device code.
    var devices: [String: DeviceGrant] = [:]

    /// Creates a server.
    public init(configuration: Configuration = Configuration(), clock: any AuthClock) {
        self.configuration = configuration
        self.clock = clock
    }

    /// Makes DPoP proofs at the token endpoint carry `nonce` (nil: none needed); a proof
    /// without it is answered `use_dpop_nonce` with the new nonce.
    public func requireDPoPNonce(_ nonce: String?) {
        dpopNonce = nonce
    }

    /// Checks the `iat` of DPoP proofs against a clock `offset` seconds from the shared one,
    /// as a server whose clock is off does: beyond the verifier's window every proof is
    /// refused (`invalid_dpop_proof`), with this clock's `Date`.
    public func skewDPoPClock(by offset: Double) {
        dpopClockOffset = offset
    }

    /// The thumbprint of the DPoP key `accessToken` is bound to, or nil for a bearer token
    /// (what a resource server reads from introspection's `cnf.jkt`).
    public func dpopBinding(of accessToken: String) -> String? {
        accessBindings[accessToken]
    }

    /// The counters.
    public var statistics: Counters { counters }

    /// Every access, refresh and ID token issued so far (kept after revocation).
    public var issuedSecrets: IssuedSecrets { issued }

    /// Queues `failure` for the next `count` refresh requests.
    public func inject(_ failure: Failure, count: Int = 1) {
        failures += Array(repeating: failure, count: count)
    }

    /// Makes refresh requests wait until ``releaseRefreshes()``.
    public func holdRefreshes() {
        holding = true
    }

    /// Lets held refresh requests (and later ones) through.
    public func releaseRefreshes() {
        holding = false
        let waiting = held
        held.removeAll()
        for continuation in waiting { continuation.resume() }
    }

    /// How many refresh requests are held.
    public var heldRefreshCount: Int { held.count }

    /// Revokes every token family (as if every refresh token expired).
    public func revokeAllSessions() {
        for id in families.keys { families[id]?.revoked = true }
    }

    /// Revokes every access token issued so far, keeping the refresh tokens (as an
    /// administrator revoking access tokens, or a resource server's key rotation, would).
    public func revokeAccessTokens() {
        accessIndex.removeAll()
        for id in families.keys { families[id]?.accessTokens.removeAll() }
    }

    /// Whether `accessToken` is one this server issued, unexpired and not revoked (what a
    /// resource server would check).
    public func isValid(accessToken: String) -> Bool {
        guard let entry = accessIndex[accessToken], let family = families[entry.family] else { return false }
        return !family.revoked && clock.now < entry.deadline
    }

    /// Registers an authorization code, as if the user had approved the client at the
    /// authorization endpoint.
    public func issueAuthorizationCode(
        subject: String, clientID: String? = "authgate", redirectURI: String? = nil,
        codeChallenge: String? = nil
    ) -> String {
        let code = "code_" + randomHex(12)
        codes[code] = AuthorizationCode(
            subject: subject, clientID: clientID, redirectURI: redirectURI, challenge: codeChallenge)
        return code
    }

    /// Sends `request` through latency, holds and injected failures to ``handle(_:)``.
    public func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        counters.requests += 1
        if configuration.latency > .zero {
            try await clock.sleep(for: configuration.latency)
        }
        guard isRefreshRequest(request) else { return handle(request) }
        if holding {
            await withCheckedContinuation { held.append($0) }
        }
        guard !failures.isEmpty else { return handle(request) }
        let failure = failures.removeFirst()
        counters.injectedFailures += 1
        switch failure {
        case .dropAnswerAfterCommit:
            _ = handle(request)
            throw AuthError.transport(.connectionLost, "injected: answer dropped after commit")
        case .networkError:
            counters.refreshAttempts += 1
            throw AuthError.transport(.connectFailed, "injected: connection refused")
        case .serverError(let status):
            counters.refreshAttempts += 1
            return HTTPResponseValue(
                status: status, headers: [("Content-Type", "text/plain")], body: Array("internal error".utf8))
        case .tooManyRequests(let seconds):
            counters.refreshAttempts += 1
            return HTTPResponseValue(
                status: 429, headers: [("Retry-After", "\(seconds)"), ("Content-Type", "text/plain")],
                body: Array("slow down".utf8))
        case .invalidGrant:
            counters.refreshAttempts += 1
            return oauthError(400, "invalid_grant", "injected")
        case .nonOAuthBody(let status):
            counters.refreshAttempts += 1
            return HTTPResponseValue(
                status: status, headers: [("Content-Type", "text/html")],
                body: Array("<html><body>Bad Gateway</body></html>".utf8))
        case .slow(let delay):
            try await clock.sleep(for: delay)
            return handle(request)
        case .answerLateAfterCommit(let delay):
            let response = handle(request)
            try await clock.sleep(for: delay)
            return response
        }
    }

    func randomHex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in
            let byte = UInt8.random(in: .min ... .max, using: &random)
            return byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }.joined()
    }
}
