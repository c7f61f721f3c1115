public import Foundation

/// The tokens of one session, as the ``AuthActor`` holds them.
///
/// The expiry is kept twice: as a deadline on the monotonic clock (what decisions use, immune
/// to wall-clock jumps) and as a wall-clock date (what is shown and persisted). Printing a
/// `Credentials` never prints a token.
public struct Credentials: TokenSetCarrier, Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The tokens and their wall-clock facts (read as the credentials' own fields:
    /// `credentials.accessToken`, `credentials.expiresAt`).
    public var tokens: TokenSet
    /// When the access token expires, on the monotonic clock; `nil` when unknown.
    public var deadline: MonotonicInstant?

    /// Creates credentials from `tokens` and their monotonic deadline.
    public init(tokens: TokenSet, deadline: MonotonicInstant?) {
        self.tokens = tokens
        self.deadline = deadline
    }

    /// Creates credentials.
    public init(
        accessToken: String, refreshToken: String?, tokenType: String = "Bearer",
        scope: String? = nil, idToken: String? = nil, deadline: MonotonicInstant?,
        expiresAt: Date?, issuedAt: Date, generation: TokenGeneration, issuedTokenType: String? = nil
    ) {
        self.init(
            tokens: TokenSet(
                accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope, idToken: idToken,
                expiresAt: expiresAt, issuedAt: issuedAt, generation: generation, issuedTokenType: issuedTokenType),
            deadline: deadline)
    }

    /// Builds credentials from a token response.
    ///
    /// The expiry comes from `expires_in`; when that is absent, from the `exp` claim of a
    /// JWT-shaped access token; otherwise it is unknown. When the response carries no new
    /// refresh token, the previous one is kept (RFC 6749 §6); when it names no
    /// `issued_token_type` (a refresh of tokens a token exchange issued), the previous one is
    /// kept too.
    public init(
        response: TokenResponse, previousRefreshToken: String?, generation: TokenGeneration,
        now: MonotonicInstant, wallNow: Date, previousIssuedTokenType: String? = nil
    ) {
        let deadline: MonotonicInstant?
        let expiresAt: Date?
        if let expiresIn = response.expiresIn {
            // A JWT's `exp` is whole seconds: servers that compute it as ⌊issued⌋ + expires_in
            // reject the token up to a second before `expires_in` says. Take the earlier of the
            // two, moved forward by at most `Self.maxJWTCorrection`, so a server whose clock
            // runs far ahead cannot make every token look expired.
            var lifetime = expiresIn
            if let exp = JWTClaims(decodingPayloadOf: response.accessToken)?.expirationDate {
                let byExp = Duration.milliseconds(Int64((exp.timeIntervalSince(wallNow) * 1000).rounded()))
                lifetime = max(expiresIn - Self.maxJWTCorrection, min(expiresIn, byExp))
            }
            deadline = now + lifetime
            expiresAt = wallNow.addingTimeInterval(lifetime.timeInterval)
        } else if let exp = JWTClaims(decodingPayloadOf: response.accessToken)?.expirationDate {
            let remaining = exp.timeIntervalSince(wallNow)
            deadline = now + .milliseconds(Int64((remaining * 1000).rounded()))
            expiresAt = exp
        } else {
            deadline = nil
            expiresAt = nil
        }
        self.init(
            accessToken: response.accessToken, refreshToken: response.refreshToken ?? previousRefreshToken,
            tokenType: response.tokenType, scope: response.scope, idToken: response.idToken, deadline: deadline,
            expiresAt: expiresAt, issuedAt: wallNow, generation: generation,
            issuedTokenType: response.issuedTokenType ?? previousIssuedTokenType)
    }

    /// The most a JWT `exp` may bring an `expires_in` expiry forward.
    static let maxJWTCorrection = Duration.seconds(2)

    /// Whether the access token has expired at `now`.
    public func isExpired(at now: MonotonicInstant) -> Bool {
        guard let deadline else { return false }
        return now >= deadline
    }

    /// A description with every token redacted.
    public var description: String { "Credentials(generation: \(tokens.generation), \(tokens.redactedFields))" }

    /// Same as ``description``: tokens are never printed.
    public var debugDescription: String { description }
}

extension Duration {
    /// The duration in seconds as a `TimeInterval`.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// A duration from a `TimeInterval`, rounded to milliseconds.
    static func interval(_ seconds: TimeInterval) -> Duration {
        .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
