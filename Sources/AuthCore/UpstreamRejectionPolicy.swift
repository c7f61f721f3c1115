/// Decides what an upstream's 401 or 403 means for the token (REFERENCES.md item 7: a 403,
/// or a 401 from some service further down, must not be mistaken for an expired token).
///
/// ```swift
/// let policy = UpstreamRejectionPolicy()
/// let challenges = response.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
/// switch policy.classify(status: response.status, wwwAuthenticate: challenges) {
/// case .tokenRejected?: // refresh(after: generation), replay once
/// default:              // pass the response through
/// }
/// ```
public struct UpstreamRejectionPolicy: Sendable, Equatable, Codable {
    /// What a rejection means.
    public enum Rejection: Sendable, Equatable {
        /// The access token was rejected (`Bearer error="invalid_token"`, or a bare Bearer
        /// challenge): a refresh may cure it. Replay once with a newer generation.
        case tokenRejected
        /// The token lacks scope (`insufficient_scope`): a refresh will not help.
        case insufficientScope
        /// Not about our token: a 403, a malformed request, or another scheme's challenge
        /// (a downstream service's Basic 401). Pass it through.
        case notAboutToken
    }

    /// Whether a 401 with no `WWW-Authenticate` at all counts as a rejected token. Many APIs
    /// answer an expired token this way; the refresh-loop guard bounds the cost of being
    /// wrong. Default `true`.
    public var bareUnauthorizedMeansTokenRejected: Bool

    /// Creates a policy.
    public init(bareUnauthorizedMeansTokenRejected: Bool = true) {
        self.bareUnauthorizedMeansTokenRejected = bareUnauthorizedMeansTokenRejected
    }

    /// Classifies an upstream response; `nil` when the status is neither 401 nor 403.
    public func classify(status: Int, wwwAuthenticate fieldValues: [String]) -> Rejection? {
        guard status == 401 || status == 403 else { return nil }
        let challenges = WWWAuthenticateChallenge.parse(fieldValues: fieldValues)
        let bearer = challenges.first { $0.isBearer }
        if status == 403 {
            return bearer?.bearerError == .insufficientScope ? .insufficientScope : .notAboutToken
        }
        guard !challenges.isEmpty else {
            return bareUnauthorizedMeansTokenRejected ? .tokenRejected : .notAboutToken
        }
        guard let bearer else { return .notAboutToken }
        switch bearer.bearerError {
        case nil, .invalidToken?: return .tokenRejected
        case .insufficientScope?: return .insufficientScope
        case .invalidRequest?, .other?: return .notAboutToken
        }
    }
}
