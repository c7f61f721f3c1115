public import AuthCore
internal import Foundation

extension FakeAuthorizationServer {
    /// Answers one request: the server's whole logic, without latency or injected failures.
    public func handle(_ request: HTTPRequestValue) -> HTTPResponseValue {
        guard request.method == "POST" else {
            return HTTPResponseValue(status: 405, headers: [("Allow", "POST")])
        }
        switch configuration.profile {
        case .standard:
            if path(of: request).hasSuffix("/revoke") { return handleRevocation(request) }
            if path(of: request).hasSuffix("/device_authorization") { return deviceAuthorization(request) }
            if path(of: request).hasSuffix("/device") { return deviceVerification(request) }
            guard path(of: request).hasSuffix("/token") else { return HTTPResponseValue(status: 404) }
            return handleStandard(request)
        case .headerToken:
            let path = path(of: request)
            if path.hasSuffix("/auth/login") { return handleHeaderLogin(request) }
            if path.hasSuffix("/auth/refresh") { return handleHeaderRefresh(request) }
            return HTTPResponseValue(status: 404)
        }
    }

    /// The request's URL without its query: the token endpoint, as an `aud` names it.
    func endpoint(of request: HTTPRequestValue) -> String {
        request.url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.url
    }

    func path(of request: HTTPRequestValue) -> String {
        URLComponents(string: request.url)?.path ?? request.url
    }

    func isRefreshRequest(_ request: HTTPRequestValue) -> Bool {
        switch configuration.profile {
        case .standard: formFields(request)["grant_type"] == "refresh_token"
        case .headerToken: path(of: request).hasSuffix("/auth/refresh")
        }
    }

    /// The form's fields in the order sent, a repeated one once per value (a JSON body's
    /// string members, in no particular order).
    func formPairs(_ request: HTTPRequestValue) -> [(String, String)] {
        if request.header("Content-Type")?.hasPrefix("application/json") == true {
            return formFields(request).map { ($0.key, $0.value) }
        }
        return FormURLEncoding.decodePairs(String(decoding: request.body, as: UTF8.self)) ?? []
    }

    func formFields(_ request: HTTPRequestValue) -> [String: String] {
        let text = String(decoding: request.body, as: UTF8.self)
        if request.header("Content-Type")?.hasPrefix("application/json") == true {
            guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            else { return [:] }
            return object.compactMapValues { $0 as? String }
        }
        var fields: [String: String] = [:]
        for (name, value) in FormURLEncoding.decodePairs(text) ?? [] { fields[name] = value }
        return fields
    }

    // MARK: - RFC 7009

    /// Token revocation: the client authenticates; a refresh or access token it was issued
    /// ends its whole family (a revoked refresh token takes its access tokens with it). An
    /// unknown token is answered 200 all the same (RFC 7009 §2.2).
    private func handleRevocation(_ request: HTTPRequestValue) -> HTTPResponseValue {
        let fields = formFields(request)
        let clientID: String?
        switch authenticateClient(request, fields) {
        case .success(let id): clientID = id
        case .failure(let box): return box.response
        }
        guard let token = fields["token"], !token.isEmpty else {
            return oauthError(400, "invalid_request", "token missing")
        }
        if let hint = fields["token_type_hint"], hint != "refresh_token" && hint != "access_token" {
            return oauthError(400, "unsupported_token_type", "token_type_hint must be refresh_token or access_token")
        }
        if let id = refreshIndex[token] ?? accessIndex[token]?.family, let family = families[id] {
            guard family.clientID == clientID else {
                return oauthError(400, "unauthorized_client", "the token was issued to another client")
            }
            families[id]?.revoked = true
            counters.revocations += 1
        }
        return HTTPResponseValue(status: 200)
    }

    // MARK: - RFC 6749

    private func handleStandard(_ request: HTTPRequestValue) -> HTTPResponseValue {
        let fields = formFields(request)
        guard let grantType = fields["grant_type"] else {
            return oauthError(400, "invalid_request", "grant_type missing")
        }
        let clientID: String?
        switch authenticateClient(request, fields) {
        case .success(let id): clientID = id
        case .failure(let box): return box.response
        }
        let jkt: String?
        switch checkDPoP(request) {
        case .success(let thumbprint): jkt = thumbprint
        case .failure(let box): return box.response
        }
        switch grantType {
        case "password":
            guard let user = fields["username"], let password = fields["password"],
                configuration.users[user] == password
            else { return oauthError(400, "invalid_grant", "bad resource owner credentials") }
            counters.grants["password", default: 0] += 1
            return tokenJSON(newFamily(subject: user, clientID: clientID, scope: fields["scope"], jkt: jkt))
        case "client_credentials":
            guard let clientID else { return oauthError(401, "invalid_client", "client authentication required") }
            counters.grants["client_credentials", default: 0] += 1
            var issued = newFamily(subject: clientID, clientID: clientID, scope: fields["scope"], jkt: jkt)
            issued.refreshToken = nil
            return tokenJSON(issued)
        case "authorization_code":
            guard let code = fields["code"], let grant = codes.removeValue(forKey: code) else {
                return oauthError(400, "invalid_grant", "unknown or used code")
            }
            if grant.redirectURI != fields["redirect_uri"] {
                return oauthError(400, "invalid_grant", "redirect_uri mismatch")
            }
            if let challenge = grant.challenge {
                guard let verifier = fields["code_verifier"],
                    PKCEPair.s256Challenge(for: verifier) == challenge
                else { return oauthError(400, "invalid_grant", "PKCE verification failed") }
            }
            counters.grants["authorization_code", default: 0] += 1
            return tokenJSON(newFamily(subject: grant.subject, clientID: clientID, scope: nil, jkt: jkt))
        case "refresh_token":
            counters.refreshAttempts += 1
            guard let token = fields["refresh_token"] else {
                return oauthError(400, "invalid_request", "refresh_token missing")
            }
            switch refresh(token, jkt: jkt) {
            case .success(let issued):
                counters.grants["refresh_token", default: 0] += 1
                return tokenJSON(issued)
            case .failure(let reason):
                return oauthError(400, "invalid_grant", reason.message)
            }
        case Grant.jwtBearerType:
            return jwtBearerGrant(fields, clientID: clientID, endpoint: endpoint(of: request))
        case Grant.tokenExchangeType:
            return tokenExchange(formPairs(request), clientID: clientID, endpoint: endpoint(of: request))
        case Grant.deviceCodeType:
            return deviceCodeGrant(fields, clientID: clientID, jkt: jkt)
        default:
            return oauthError(400, "unsupported_grant_type", grantType)
        }
    }

    func authenticateClient(_ request: HTTPRequestValue, _ fields: [String: String])
        -> Result<String?, ResponseBox>
    {
        if fields["client_assertion_type"] != nil || fields["client_assertion"] != nil {
            return authenticateAssertion(request, fields)
        }
        var id = fields["client_id"]
        var secret = fields["client_secret"]
        if let header = request.header("Authorization"), header.lowercased().hasPrefix("basic "),
            let data = Data(base64Encoded: String(header.dropFirst(6))),
            let pair = String(data: data, encoding: .utf8)
        {
            let parts = pair.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            id = FormURLEncoding.decode(parts[0])
            secret = parts.count > 1 ? FormURLEncoding.decode(parts[1]) : nil
        }
        guard !configuration.clients.isEmpty else { return .success(id) }
        guard let id, let expected = configuration.clients[id], expected == secret else {
            return .failure(ResponseBox(response: oauthError(401, "invalid_client", "client authentication failed")))
        }
        return .success(id)
    }

    /// RFC 7523 §2.2 / §3: the assertion is the client's only credential; its signature must
    /// verify with a key registered for the client, and its `jti` is accepted once.
    private func authenticateAssertion(_ request: HTTPRequestValue, _ fields: [String: String]) -> Result<String?, ResponseBox> {
        guard fields["client_assertion_type"] == ClientAssertion.type, let assertion = fields["client_assertion"] else {
            return .failure(ResponseBox(response: oauthError(400, "invalid_request", "client_assertion_type must be jwt-bearer")))
        }
        if fields["client_secret"] != nil || request.header("Authorization")?.lowercased().hasPrefix("basic ") == true {
            return .failure(
                ResponseBox(response: oauthError(400, "invalid_request", "more than one client authentication method")))
        }
        let id = fields["client_id"] ?? JWTClaims(decodingPayloadOf: assertion)?.subject
        guard let id, let keys = configuration.assertionKeys[id] ?? configuration.clients[id].map({ [.secret($0)] }) else {
            return .failure(ResponseBox(response: oauthError(401, "invalid_client", "unknown client")))
        }
        let endpoint = endpoint(of: request)
        // OpenID Connect Core §9: the audience is the token endpoint, at whichever endpoint
        // the client authenticates (revocation, device authorization); the endpoint itself
        // and the issuer are accepted too.
        let tokenEndpoint = String(endpoint[..<(endpoint.lastIndex(of: "/") ?? endpoint.endIndex)]) + "/token"
        let verifier = ClientAssertionVerifier(
            keys: keys, audiences: Set([endpoint, tokenEndpoint] + (configuration.issuer.map { [$0] } ?? [])))
        switch verifier.verify(assertion, clientID: id, now: clock.wallNow, seen: { assertionIDs.contains($0) }) {
        case .success(let claims):
            assertionIDs.insert(claims.jwtID)
            counters.clientAssertions += 1
            return .success(id)
        case .failure(let refusal):
            counters.assertionRefusals.append(refusal)
            return .failure(ResponseBox(response: oauthError(401, "invalid_client", refusal.rawValue)))
        }
    }

    // MARK: - SEEDS row 7

    private func handleHeaderLogin(_ request: HTTPRequestValue) -> HTTPResponseValue {
        let fields = formFields(request)
        guard let user = fields["username"], let password = fields["password"],
            configuration.users[user] == password
        else { return seedError("INVALID_CREDENTIALS", "wrong user name or password") }
        counters.grants["password", default: 0] += 1
        return headerTokenResponse(newFamily(subject: user, clientID: nil, scope: nil))
    }

    private func handleHeaderRefresh(_ request: HTTPRequestValue) -> HTTPResponseValue {
        counters.refreshAttempts += 1
        let fields = formFields(request)
        guard let bearer = request.header("Authorization"), bearer.hasPrefix("Bearer "),
            let access = accessIndex[String(bearer.dropFirst(7))]
        else { return seedError("INVALID_ACCESS_TOKEN", "expired access token required as Bearer") }
        guard let token = fields["refreshToken"], refreshIndex[token] == access.family else {
            return seedError("REFRESH_TOKEN_EXPIRED", "refresh token does not match")
        }
        switch refresh(token) {
        case .success(let issued):
            counters.grants["refresh_token", default: 0] += 1
            return headerTokenResponse(issued)
        case .failure:
            return seedError("REFRESH_TOKEN_EXPIRED", "log in again")
        }
    }

    private func seedError(_ code: String, _ message: String) -> HTTPResponseValue {
        let body = Self.json(["code": code, "message": message])
        return HTTPResponseValue(status: 401, headers: [("Content-Type", "application/json")], body: body)
    }

    private func headerTokenResponse(_ issued: IssuedTokens) -> HTTPResponseValue {
        var data: [String: Any] = [:]
        if let refresh = issued.refreshToken { data["refreshToken"] = refresh }
        if configuration.sendsExpiresIn { data["expiresIn"] = Int(issued.lifetime.components.seconds) }
        let body = Self.json(["data": data])
        return HTTPResponseValue(
            status: 200,
            headers: [("Authorization", "Bearer \(issued.accessToken)"), ("Content-Type", "application/json")],
            body: body)
    }

    // MARK: - Responses

    func oauthError(_ status: Int, _ code: String, _ description: String) -> HTTPResponseValue {
        let body = Self.json(["error": code, "error_description": description])
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"), ("Cache-Control", "no-store"),
        ]
        if status == 401 { headers.append(("WWW-Authenticate", #"Basic realm="token""#)) }
        return HTTPResponseValue(status: status, headers: headers, body: body)
    }

    /// The DPoP proof of a token request (RFC 9449 §5): none (nil), the thumbprint of a good
    /// one's key, or the answer refusing it: `use_dpop_nonce` with the nonce when the server
    /// asks for one the proof lacks, else `invalid_dpop_proof`.
    private func checkDPoP(_ request: HTTPRequestValue) -> Result<String?, ResponseBox> {
        guard let proof = request.header("DPoP") else { return .success(nil) }
        do throws(DPoPVerifier.Refusal) {
            let jkt = try DPoPVerifier().verify(
                proof, method: request.method, url: request.url, now: clock.wallNow + dpopClockOffset, nonce: dpopNonce,
                seen: &dpopIDs)
            counters.dpopProofs += 1
            return .success(jkt)
        } catch {
            counters.dpopRefusals.append(error)
            guard error == .nonceNeeded, let nonce = dpopNonce else {
                var refusal = oauthError(400, "invalid_dpop_proof", error.rawValue)
                refusal.headers.append(("Date", HTTPDate.format(clock.wallNow + dpopClockOffset)))
                return .failure(ResponseBox(response: refusal))
            }
            var answer = oauthError(400, "use_dpop_nonce", "Authorization server requires nonce in DPoP proof")
            answer.headers.append(("DPoP-Nonce", nonce))
            return .failure(ResponseBox(response: answer))
        }
    }

    func tokenJSON(_ issued: IssuedTokens, issuedTokenType: String? = nil) -> HTTPResponseValue {
        var object: [String: Any] = ["access_token": issued.accessToken, "token_type": issued.tokenType]
        if let issuedTokenType { object["issued_token_type"] = issuedTokenType }
        if configuration.sendsExpiresIn { object["expires_in"] = Int(issued.lifetime.components.seconds) }
        if let refresh = issued.refreshToken { object["refresh_token"] = refresh }
        if let scope = issued.scope { object["scope"] = scope }
        if let idToken = issued.idToken { object["id_token"] = idToken }
        let body = Self.json(object)
        return HTTPResponseValue(
            status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
            body: body)
    }
}

/// A response carried in a `Result` failure.
struct ResponseBox: Error {
    let response: HTTPResponseValue
}
