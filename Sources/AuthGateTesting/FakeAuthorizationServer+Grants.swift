internal import AuthCore
internal import Foundation

extension FakeAuthorizationServer {
    /// `access_token`, the type token exchange issues here.
    static let issuedAccessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    /// The JWT bearer grant (RFC 7523 §2.1, §3): the assertion must be signed by a trusted
    /// issuer, name this server in `aud`, name a subject, not have expired, and not reuse a
    /// `jti`; any fault is `invalid_grant` (§3.1). No refresh token unless configured.
    func jwtBearerGrant(_ fields: [String: String], clientID: String?, endpoint: String) -> HTTPResponseValue {
        guard let assertion = fields["assertion"], !assertion.isEmpty else {
            return refuseGrant(400, "invalid_request", "assertion missing")
        }
        let subject: String
        switch verifyTrustedJWT(assertion, endpoint: endpoint, once: true) {
        case .success(let s): subject = s
        case .failure(let reason): return refuseGrant(400, "invalid_grant", reason)
        }
        counters.grants[Grant.jwtBearerType, default: 0] += 1
        var issued = newFamily(subject: subject, clientID: clientID, scope: fields["scope"])
        if !configuration.grantsIssueRefreshTokens { issued.refreshToken = nil }
        return tokenJSON(issued)
    }

    /// Token exchange (RFC 8693 §2.1, §2.2): `subject_token` and `subject_token_type` are
    /// required; `audience` and `resource` may repeat, and each must name a configured target
    /// (`invalid_target`); any other parameter given twice is `invalid_request` (RFC 6749
    /// §3.2); each `resource` must be an absolute URI; a subject token that is not valid is
    /// `invalid_request` (§2.2.2). An access-token subject must be a live token of this
    /// server; a JWT (or ID token) must be signed by a trusted issuer and name this server
    /// in `aud`. The answer carries `issued_token_type`.
    func tokenExchange(_ form: [(String, String)], clientID: String?, endpoint: String) -> HTTPResponseValue {
        counters.lastExchangeFields = form.map { name, value in
            "\(name)=\(name == "subject_token" || name == "actor_token" ? "<redacted>" : value)"
        }
        var fields: [String: String] = [:]
        var targets: [(String, String)] = []
        for (name, value) in form {
            if name == "audience" || name == "resource" {
                targets.append((name, value))
            } else if fields.updateValue(value, forKey: name) != nil {
                return refuseGrant(400, "invalid_request", "\(name) given more than once")
            }
        }
        guard let token = fields["subject_token"], !token.isEmpty else {
            return refuseGrant(400, "invalid_request", "subject_token missing")
        }
        guard let type = fields["subject_token_type"], !type.isEmpty else {
            return refuseGrant(400, "invalid_request", "subject_token_type missing")
        }
        for (name, target) in targets {
            if name == "resource", !target.contains(":") || target.contains("#") {
                return refuseGrant(400, "invalid_target", "resource must be an absolute URI without a fragment")
            }
            guard configuration.exchangeTargets.contains(target) else {
                return refuseGrant(400, "invalid_target", "\(name) is not a service this server issues tokens for")
            }
        }
        if let requested = fields["requested_token_type"], requested != Self.issuedAccessTokenType {
            return refuseGrant(400, "invalid_request", "only access tokens are issued")
        }
        let subject: String
        switch type {
        case Self.issuedAccessTokenType:
            guard isValid(accessToken: token), let family = accessIndex[token].flatMap({ families[$0.family] }) else {
                return refuseGrant(400, "invalid_request", "subject_token is not an active access token")
            }
            subject = family.subject
        case TokenExchangeSettings.jwtTokenType, TokenExchangeSettings.idTokenType:
            switch verifyTrustedJWT(token, endpoint: endpoint) {
            case .success(let s): subject = s
            case .failure(let reason): return refuseGrant(400, "invalid_request", "subject_token: \(reason)")
            }
        default:
            return refuseGrant(400, "invalid_request", "unsupported subject_token_type")
        }
        counters.grants[Grant.tokenExchangeType, default: 0] += 1
        var issued = newFamily(subject: subject, clientID: clientID, scope: fields["scope"])
        if !configuration.grantsIssueRefreshTokens { issued.refreshToken = nil }
        return tokenJSON(issued, issuedTokenType: Self.issuedAccessTokenType)
    }

    /// The subject of `jwt` when a trusted issuer signed it for this server; else why not.
    /// With `once`, a `jti` is accepted once (RFC 7523 §3 item 7 allows a server to ensure
    /// it); a subject token is presented again until it expires, as STSs accept.
    private func verifyTrustedJWT(_ jwt: String, endpoint: String, once: Bool = false) -> Result<String, GrantRefusal> {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return .failure(GrantRefusal("the JWT is not a compact JWS with JSON claims")) }
        guard let iss = claims["iss"] as? String, let keys = configuration.trustedJWTIssuers[iss] else {
            return .failure(GrantRefusal("the JWT's issuer is not trusted"))
        }
        let verifier = ClientAssertionVerifier(
            keys: keys, audiences: Set([endpoint] + (configuration.issuer.map { [$0] } ?? [])), isClientAssertion: false)
        switch verifier.verify(jwt, clientID: nil, now: clock.wallNow, seen: { once && grantAssertionIDs.contains($0) }) {
        case .success(let claims):
            if once && !claims.jwtID.isEmpty { grantAssertionIDs.insert(claims.jwtID) }
            return .success(claims.subject)
        case .failure(let refusal):
            return .failure(GrantRefusal(refusal.rawValue.replacingOccurrences(of: "the assertion", with: "the JWT")))
        }
    }

    private func refuseGrant(_ status: Int, _ code: String, _ description: String) -> HTTPResponseValue {
        counters.grantRefusals.append(description)
        return oauthError(status, code, description)
    }

    private func refuseGrant(_ status: Int, _ code: String, _ reason: GrantRefusal) -> HTTPResponseValue {
        refuseGrant(status, code, reason.description)
    }
}

/// Why a grant's JWT was refused.
struct GrantRefusal: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
