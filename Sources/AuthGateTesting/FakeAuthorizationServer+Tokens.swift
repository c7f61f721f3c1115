internal import AuthCore
internal import Foundation

extension FakeAuthorizationServer {
    struct IssuedTokens {
        var accessToken: String
        var refreshToken: String?
        var scope: String?
        var lifetime: Duration
        var idToken: String?
        /// `DPoP` when the access token is bound to a DPoP key, else `Bearer`.
        var tokenType = "Bearer"
    }

    struct RefreshRefusal: Error {
        let message: String
    }

    /// Starts a token family for `subject` and issues its first pair.
    func newFamily(subject: String, clientID: String?, scope: String?, jkt: String? = nil) -> IssuedTokens {
        let id = families.count + 1
        let refresh = "rt_" + randomHex(16)
        issued.refreshTokens.append(refresh)
        families[id] = Family(subject: subject, clientID: clientID, scope: scope, currentRefreshToken: refresh, jkt: jkt)
        refreshIndex[refresh] = id
        return bound(
            IssuedTokens(
                accessToken: issueAccessToken(family: id, subject: subject), refreshToken: refresh,
                scope: scope, lifetime: configuration.accessTokenLifetime,
                idToken: issueIDToken(subject: subject, clientID: clientID)),
            to: jkt)
    }

    /// `tokens` with the access token bound to the DPoP key `jkt`, when there is one.
    func bound(_ tokens: IssuedTokens, to jkt: String?) -> IssuedTokens {
        guard let jkt else { return tokens }
        var tokens = tokens
        accessBindings[tokens.accessToken] = jkt
        tokens.tokenType = "DPoP"
        return tokens
    }

    /// The refresh-token grant with rotation, reuse detection and grace window (RFC 9700).
    func refresh(_ token: String, jkt: String? = nil) -> Result<IssuedTokens, RefreshRefusal> {
        guard let id = refreshIndex[token], var family = families[id] else {
            return .failure(RefreshRefusal(message: "unknown refresh token"))
        }
        guard !family.revoked else { return .failure(RefreshRefusal(message: "token family revoked")) }
        if let bound = family.jkt, bound != jkt {
            return .failure(RefreshRefusal(message: "the refresh token is bound to another DPoP key"))
        }
        let now = clock.now
        if token != family.currentRefreshToken {
            if let retiredAt = family.retired[token], let grace = configuration.reuseGraceWindow,
                now - retiredAt <= grace
            {
                counters.graceReuses += 1
                return .success(
                    bound(
                        IssuedTokens(
                            accessToken: issueAccessToken(family: id, subject: family.subject),
                            refreshToken: family.currentRefreshToken, scope: family.scope,
                            lifetime: configuration.accessTokenLifetime,
                            idToken: issueIDToken(subject: family.subject, clientID: family.clientID)),
                        to: jkt))
            }
            if configuration.reuseDetection {
                counters.reuseDetections += 1
                family.revoked = true
                families[id] = family
                return .failure(RefreshRefusal(message: "refresh token reuse detected; family revoked"))
            }
            return .failure(RefreshRefusal(message: "refresh token superseded"))
        }
        if configuration.revokesPreviousAccessTokens {
            for old in family.accessTokens { accessIndex[old] = nil }
            family.accessTokens.removeAll()
        }
        if configuration.rotatesRefreshTokens {
            let next = "rt_" + randomHex(16)
            issued.refreshTokens.append(next)
            family.retired[token] = now
            family.currentRefreshToken = next
            refreshIndex[next] = id
        }
        families[id] = family
        return .success(
            bound(
                IssuedTokens(
                    accessToken: issueAccessToken(family: id, subject: family.subject),
                    refreshToken: configuration.rotatesRefreshTokens ? family.currentRefreshToken : nil,
                    scope: family.scope, lifetime: configuration.accessTokenLifetime,
                    idToken: issueIDToken(subject: family.subject, clientID: family.clientID)),
                to: jkt))
    }

    private func issueAccessToken(family: Int, subject: String) -> String {
        let token: String
        let format: TokenFormat = configuration.profile == .headerToken ? .jwt : configuration.tokenFormat
        switch format {
        case .opaque:
            token = "at_" + randomHex(16)
        case .jwt:
            let issuedAt = clock.wallNow.timeIntervalSince1970
            let lifetime = configuration.accessTokenLifetime
            let expiry = issuedAt + Double(lifetime.components.seconds)
            let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
            let claims: [String: Any] = [
                "sub": subject, "iat": Int(issuedAt), "exp": Int(expiry), "jti": randomHex(8),
            ]
            let payload = Self.json(claims)
            token = "\(header).\(Base64URL.encode(payload)).\(Base64URL.encode(Array(randomHex(16).utf8)))"
        }
        accessIndex[token] = (family, clock.now + configuration.accessTokenLifetime)
        families[family]?.accessTokens.append(token)
        issued.accessTokens.append(token)
        return token
    }

    /// An OpenID Connect ID token for `subject`, when the configuration issues them.
    private func issueIDToken(subject: String, clientID: String?) -> String? {
        guard configuration.issuesIDTokens else { return nil }
        let issuedAt = Int(clock.wallNow.timeIntervalSince1970)
        var claims: [String: Any] = [
            "sub": subject, "iat": issuedAt, "exp": issuedAt + Int(configuration.accessTokenLifetime.components.seconds),
            "nonce": randomHex(8),
        ]
        if let clientID { claims["aud"] = clientID }
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = Self.json(claims)
        let token = "\(header).\(Base64URL.encode(payload)).\(Base64URL.encode(Array(randomHex(16).utf8)))"
        issued.idTokens.append(token)
        return token
    }
}
