/// Decides what an upstream's 401 or 403 means for the token (REFERENCES.md item 7: a 403,
/// or a 401 from some service further down, must not be mistaken for an expired token).
///
/// Which statuses can mean "token rejected" and which `Bearer` realms are ours are
/// configurable; the defaults follow RFC 6750 §3.1 (401 only, any realm).
///
/// ```swift
/// let policy = UpstreamRejectionPolicy(statuses: [401, 419], realms: ["api"])
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
        /// Not about our token: a 403, a malformed request, another scheme's challenge
        /// (a downstream service's Basic 401) or a realm that is not ours. Pass it through.
        case notAboutToken
    }

    /// The statuses that can mean "token rejected" (default `[401]`). Some APIs answer an
    /// expired token with 403 or a private status such as 419 or 440; list them here. A
    /// status listed here still needs a matching challenge (or none at all, see
    /// ``bareUnauthorizedMeansTokenRejected``); `insufficient_scope` never refreshes.
    public var statuses: [Int]

    /// When set, only a `Bearer` challenge whose `realm` is in this list (compared exactly,
    /// as RFC 9110 §11.5 makes realms case-sensitive) is about our token. A challenge from
    /// another realm, or without a realm, is passed through. `nil` (the default) accepts any
    /// realm.
    public var realms: [String]?

    /// Whether a rejection status with no `WWW-Authenticate` at all counts as a rejected
    /// token. Many APIs answer an expired token this way; the refresh-loop guard bounds the
    /// cost of being wrong. Default `true`.
    public var bareUnauthorizedMeansTokenRejected: Bool

    /// Creates a policy; throws when a status is not a 4xx or a realm list is empty.
    public init(statuses: [Int] = [401], realms: [String]? = nil, bareUnauthorizedMeansTokenRejected: Bool = true) throws {
        if statuses.isEmpty {
            throw AuthError.input(.invalidPolicy, "statuses must name at least one status")
        }
        if let bad = statuses.first(where: { !(400...499).contains($0) }) {
            throw AuthError.input(.invalidPolicy, "statuses: \(bad) is not a 4xx status")
        }
        if let realms, realms.isEmpty {
            throw AuthError.input(.invalidPolicy, "realms must name at least one realm, or be left out to accept any")
        }
        self.statuses = statuses
        self.realms = realms
        self.bareUnauthorizedMeansTokenRejected = bareUnauthorizedMeansTokenRejected
    }

    /// The RFC 6750 default: 401 only, any realm, a bare 401 counts.
    public init() {
        statuses = [401]
        realms = nil
        bareUnauthorizedMeansTokenRejected = true
    }

    private enum CodingKeys: String, CodingKey {
        case statuses, realms, bareUnauthorizedMeansTokenRejected
    }

    /// Decodes a policy; every field is optional and checked.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        do {
            try self.init(
                statuses: c.decodeIfPresent([Int].self, forKey: .statuses) ?? [401],
                realms: c.decodeIfPresent([String].self, forKey: .realms),
                bareUnauthorizedMeansTokenRejected: c.decodeIfPresent(Bool.self, forKey: .bareUnauthorizedMeansTokenRejected)
                    ?? true)
        } catch let error as AuthError where error.code == .invalidPolicy {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    /// Classifies an upstream response; `nil` when the status is neither 403 nor one of
    /// ``statuses``.
    public func classify(status: Int, wwwAuthenticate fieldValues: [String]) -> Rejection? {
        let counts = statuses.contains(status)
        guard counts || status == 403 else { return nil }
        let challenges = WWWAuthenticateChallenge.parse(fieldValues: fieldValues)
        // A DPoP challenge (RFC 9449 §7.1) speaks RFC 6750's errors; its own two
        // (`use_dpop_nonce`, `invalid_dpop_proof`) are about the proof, not the token.
        let bearer = challenges.first { ($0.isBearer || $0.scheme.lowercased() == "dpop") && isOurRealm($0) }
        guard counts else {
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

    private func isOurRealm(_ challenge: WWWAuthenticateChallenge) -> Bool {
        guard let realms else { return true }
        guard let realm = challenge.realm else { return false }
        return realms.contains(realm)
    }
}
