import AuthCore
import AuthGateTesting
import Foundation
import Testing

/// A transport that records requests and answers with a fixed response.
actor ScriptedTransport: HTTPTransport {
    var requests: [HTTPRequestValue] = []
    var response: HTTPResponseValue
    var error: (any Error)?

    init(_ response: HTTPResponseValue = HTTPResponseValue(status: 200), error: (any Error)? = nil) {
        self.response = response
        self.error = error
    }

    func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        requests.append(request)
        if let error { throw error }
        return response
    }
}

func json(_ status: Int, _ text: String, headers: [(name: String, value: String)] = []) -> HTTPResponseValue {
    HTTPResponseValue(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
}

@Suite struct OAuth2ClientTests {
    let clock = TestClock()

    func client(
        _ transport: any HTTPTransport, authentication: ClientAuthentication = .basic,
        mapping: TokenEndpointMapping = .standard
    ) -> OAuth2Client {
        OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "my client",
                clientSecret: "s3cr:t", authentication: authentication, mapping: mapping),
            transport: transport, clock: clock)
    }

    func fields(_ request: HTTPRequestValue) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in FormURLEncoding.decodePairs(String(decoding: request.body, as: UTF8.self)) ?? [] {
            result[name] = value
        }
        return result
    }

    @Test func passwordGrantUsesFormBodyAndBasicClientAuthentication() throws {
        let request = try client(ScriptedTransport()).makeRequest(
            for: .password(username: "alice", password: "p&ss word", scope: "read write"))
        #expect(request.method == "POST")
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(
            fields(request) == ["grant_type": "password", "username": "alice", "password": "p&ss word", "scope": "read write"])
        // RFC 6749 §2.3.1: id and secret are form-encoded before base64.
        let expected = Data("my+client:s3cr%3At".utf8).base64EncodedString()
        #expect(request.header("Authorization") == "Basic \(expected)")
    }

    @Test func postClientAuthenticationPutsCredentialsInTheBody() throws {
        let request = try client(ScriptedTransport(), authentication: .post).makeRequest(for: .clientCredentials(scope: nil))
        #expect(request.header("Authorization") == nil)
        #expect(fields(request) == ["grant_type": "client_credentials", "client_id": "my client", "client_secret": "s3cr:t"])
    }

    @Test(arguments: [ClientAuthentication.tlsClientAuth, .selfSignedTLSClientAuth])
    func mutualTLSMethodsSendTheClientIDAndShowTheCertificateOnEveryRequest(method: ClientAuthentication) throws {
        let certificate = ClientCertificate(certificateFile: "/etc/authgate/client.pem", keyFile: "/etc/authgate/client.key")
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://mtls.example.test/token", clientID: "gate", authentication: method,
                revocationEndpoint: "https://mtls.example.test/revoke", certificate: certificate),
            transport: ScriptedTransport(), clock: clock)
        let request = try client.makeRequest(for: .refreshToken("rt"))
        #expect(request.header("Authorization") == nil, "the certificate is the credential (RFC 8705 §2)")
        #expect(fields(request) == ["grant_type": "refresh_token", "refresh_token": "rt", "client_id": "gate"])
        #expect(request.clientCertificate == certificate)
        let revocation = try #require(try client.makeRevocationRequest(token: "rt", hint: "refresh_token"))
        #expect(fields(revocation) == ["token": "rt", "token_type_hint": "refresh_token", "client_id": "gate"])
        #expect(revocation.clientCertificate == certificate)
    }

    @Test func aCertificateBesideASecretIsShownForTokenBinding() throws {
        let certificate = ClientCertificate(certificateFile: "/c.pem", keyFile: "/c.key")
        let request = try OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://id.example.test/token", clientID: "gate", clientSecret: "s", authentication: .basic,
                certificate: certificate),
            transport: ScriptedTransport(), clock: clock
        ).makeRequest(for: .clientCredentials())
        #expect(request.header("Authorization")?.hasPrefix("Basic ") == true)
        #expect(request.clientCertificate == certificate, "RFC 8705 §3: the tokens may be bound to it")
        #expect(try client(ScriptedTransport()).makeRequest(for: .clientCredentials()).clientCertificate == nil)
    }

    @Test func authorizationCodeGrantCarriesTheVerifier() throws {
        let pkce = PKCEPair()
        let request = try client(ScriptedTransport(), authentication: .none).makeRequest(
            for: .authorizationCode(code: "abc", redirectURI: "https://app/cb", codeVerifier: pkce.verifier))
        #expect(
            fields(request) == [
                "grant_type": "authorization_code", "code": "abc", "redirect_uri": "https://app/cb",
                "code_verifier": pkce.verifier, "client_id": "my client",
            ])
    }

    @Test func refreshGrantDoesNotSendTheAccessTokenByDefault() throws {
        let request = try client(ScriptedTransport()).makeRequest(for: .refreshToken("rt", expiredAccessToken: "at"))
        #expect(fields(request) == ["grant_type": "refresh_token", "refresh_token": "rt"])
        #expect(request.header("Authorization")?.hasPrefix("Basic ") == true)
    }

    @Test func mappingAddsExtraFieldsRenamesFieldsAndReadsNestedPaths() async throws {
        var mapping = TokenEndpointMapping(
            requestFieldNames: ["username": "login", "password": "secret"],
            extraFields: ["audience": "https://api.example.test", "device": "sidecar"])
        mapping.paths = .init(accessToken: "result.tokens.0.value", expiresIn: "result.ttl", tokenType: "result.kind")
        let transport = ScriptedTransport(json(200, #"{"result":{"tokens":[{"value":"nested"}],"ttl":90,"kind":"Bearer"}}"#))
        let oauth = client(transport, authentication: .post, mapping: mapping)
        let response = try await oauth.requestToken(.password(username: "alice", password: "pw"))
        #expect(response.accessToken == "nested")
        #expect(response.expiresIn == .seconds(90))
        let sent = try #require(await transport.requests.first)
        #expect(
            fields(sent) == [
                "grant_type": "password", "login": "alice", "secret": "pw", "client_id": "my client",
                "client_secret": "s3cr:t", "audience": "https://api.example.test", "device": "sidecar",
            ])

        mapping.requestBody = .json
        let jsonRequest = try client(ScriptedTransport(), authentication: .none, mapping: mapping)
            .makeRequest(for: .clientCredentials(scope: "read"))
        let body = try JSONSerialization.jsonObject(with: Data(jsonRequest.body)) as? [String: String]
        #expect(
            body == [
                "grant_type": "client_credentials", "scope": "read", "client_id": "my client",
                "audience": "https://api.example.test", "device": "sidecar",
            ])
    }

    @Test func basicAuthenticationCannotShareTheAuthorizationHeaderWithAnExpiredBearer() {
        let mapping = TokenEndpointMapping(refreshSendsExpiredAccessToken: true)
        let error = #expect(throws: AuthError.self) {
            try client(ScriptedTransport(), authentication: .basic, mapping: mapping)
                .makeRequest(for: .refreshToken("rt", expiredAccessToken: "at"))
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func successfulResponseIsParsed() async throws {
        let transport = ScriptedTransport(
            json(200, #"{"access_token":"a","token_type":"bearer","expires_in":"120","refresh_token":"r","scope":"read"}"#))
        let response = try await client(transport).requestToken(.refreshToken("old"))
        #expect(
            response
                == TokenResponse(
                    accessToken: "a", tokenType: "bearer", expiresIn: .seconds(120), refreshToken: "r", scope: "read"))
    }

    @Test(arguments: [
        (400, "invalid_grant", AuthError.Disposition.terminal),
        (401, "invalid_client", .terminal),
        (400, "unauthorized_client", .terminal),
        (400, "temporarily_unavailable", .transient),
        (403, "invalid_grant", .transient),
    ])
    func oauthErrorBodiesAreClassified(status: Int, code: String, disposition: AuthError.Disposition) async {
        let transport = ScriptedTransport(json(status, #"{"error":"\#(code)","error_description":"nope"}"#))
        let error = await #expect(throws: AuthError.self) { try await client(transport).requestToken(.refreshToken("r")) }
        #expect(error?.code == .oauthError)
        #expect(error?.oauthError == OAuthErrorResponse(error: code, errorDescription: "nope"))
        #expect(error?.disposition == disposition)
    }

    /// A refused assertion can be put right on disk without a restart, and the refresh token
    /// may still be good: `invalid_client` keeps the session then; `invalid_grant` does not.
    @Test(arguments: [ClientAuthentication.clientSecretJWT, .privateKeyJWT, .tlsClientAuth, .selfSignedTLSClientAuth])
    func aRefusedAssertionOrCertificateIsTransientButARefusedGrantIsNot(method: ClientAuthentication) throws {
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "c", authentication: method),
            transport: ScriptedTransport(), clock: clock)
        for (code, disposition) in [("invalid_client", AuthError.Disposition.transient), ("invalid_grant", .terminal)] {
            let error = #expect(throws: AuthError.self) {
                _ = try client.parse(json(401, #"{"error":"\#(code)"}"#), for: .refreshToken("r"), now: Date())
            }
            #expect(error?.disposition == disposition, "\(code)")
        }
    }

    @Test func rateLimitAndServerErrorsAreTransientWithRetryAfter() async {
        let limited = ScriptedTransport(HTTPResponseValue(status: 429, headers: [("Retry-After", "17")]))
        let error = await #expect(throws: AuthError.self) { try await client(limited).requestToken(.refreshToken("r")) }
        #expect(error?.code == .rateLimited)
        #expect(error?.disposition == .transient)
        #expect(error?.retryAfter == .seconds(17))

        let date = "Fri, 15 Jan 2027 08:00:30 GMT"
        let unavailable = ScriptedTransport(HTTPResponseValue(status: 503, headers: [("Retry-After", date)]))
        let serverError = await #expect(throws: AuthError.self) { try await client(unavailable).requestToken(.refreshToken("r")) }
        #expect(serverError?.code == .serverError)
        #expect(serverError?.disposition == .transient)
        #expect(serverError?.retryAfter == .seconds(30), "HTTP-date 30 s after the test clock's wall time")
    }

    @Test func nonOAuthBodyIsTransientAndGarbageSuccessIsAmbiguous() async {
        let html = ScriptedTransport(
            HTTPResponseValue(status: 401, headers: [("Content-Type", "text/html")], body: Array("<html/>".utf8)))
        let htmlError = await #expect(throws: AuthError.self) { try await client(html).requestToken(.refreshToken("r")) }
        #expect(htmlError?.code == .unexpectedStatus)
        #expect(htmlError?.disposition == .transient)

        let garbage = ScriptedTransport(HTTPResponseValue(status: 200, body: Array("oops".utf8)))
        let garbageError = await #expect(throws: AuthError.self) { try await client(garbage).requestToken(.refreshToken("r")) }
        #expect(garbageError?.code == .malformedResponse)
        #expect(garbageError?.disposition == .ambiguous)
    }

    @Test func transportFailuresAreTransientOrAmbiguous() async {
        let refused = ScriptedTransport(error: AuthError.transport(.connectFailed))
        let refusedError = await #expect(throws: AuthError.self) { try await client(refused).requestToken(.refreshToken("r")) }
        #expect(refusedError?.code == .network)
        #expect(refusedError?.disposition == .transient)
        let lost = ScriptedTransport(error: AuthError.transport(.connectionLost))
        let lostError = await #expect(throws: AuthError.self) { try await client(lost).requestToken(.refreshToken("r")) }
        #expect(lostError?.disposition == .ambiguous)
    }

    @Test func standardGrantsWorkAgainstTheFakeServer() async throws {
        let server = FakeAuthorizationServer(clock: clock)
        let oauth = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "s3cret"),
            transport: server, clock: clock)
        let password = try await oauth.requestToken(.password(username: "alice", password: "wonderland"))
        #expect(password.refreshToken != nil)
        #expect(password.expiresIn == .seconds(3600))
        let refreshed = try await oauth.requestToken(.refreshToken(password.refreshToken!))
        #expect(refreshed.refreshToken != password.refreshToken, "rotation")
        let machine = try await oauth.requestToken(.clientCredentials())
        #expect(machine.refreshToken == nil)

        let pkce = PKCEPair()
        let code = await server.issueAuthorizationCode(
            subject: "alice", redirectURI: "https://app/cb", codeChallenge: pkce.challenge)
        let wrong = await #expect(throws: AuthError.self) {
            try await oauth.requestToken(
                .authorizationCode(code: code, redirectURI: "https://app/cb", codeVerifier: "wrong-verifier"))
        }
        #expect(wrong?.oauthError?.error == "invalid_grant")
        let code2 = await server.issueAuthorizationCode(
            subject: "alice", redirectURI: "https://app/cb", codeChallenge: pkce.challenge)
        let exchanged = try await oauth.requestToken(
            .authorizationCode(code: code2, redirectURI: "https://app/cb", codeVerifier: pkce.verifier))
        #expect(await server.isValid(accessToken: exchanged.accessToken))

        let badClient = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "wrong"),
            transport: server, clock: clock)
        let clientError = await #expect(throws: AuthError.self) { try await badClient.requestToken(.clientCredentials()) }
        #expect(clientError?.oauthError?.error == "invalid_client")
        #expect(clientError?.disposition == .terminal)
    }
}

/// SEEDS.md row 7, expressed by the declarative mapping alone.
@Suite struct HeaderTokenMappingTests {
    static let mappingJSON = """
        {
          "requestBody": "json",
          "refreshURL": "https://api.example.test/auth/refresh",
          "omitGrantType": true,
          "requestFieldNames": { "refresh_token": "refreshToken" },
          "refreshSendsExpiredAccessToken": true,
          "accessTokenHeader": "Authorization",
          "paths": { "refreshToken": "data.refreshToken", "expiresIn": "data.expiresIn" },
          "terminalStatuses": [401]
        }
        """

    func harness(_ configure: (inout FakeAuthorizationServer.Configuration) -> Void = { _ in }) throws -> Harness {
        let mapping = try JSONDecoder().decode(TokenEndpointMapping.self, from: Data(Self.mappingJSON.utf8))
        var server = FakeAuthorizationServer.Configuration()
        server.profile = .headerToken
        server.sendsExpiresIn = false  // expiry only in the JWT's exp
        server.accessTokenLifetime = .seconds(600)
        configure(&server)
        return Harness(
            server: server,
            client: .init(tokenEndpoint: "https://api.example.test/auth/login", authentication: .none, mapping: mapping))
    }

    @Test func mappingDecodesFromJSONConfiguration() throws {
        let mapping = try JSONDecoder().decode(TokenEndpointMapping.self, from: Data(Self.mappingJSON.utf8))
        #expect(mapping.requestBody == .json)
        #expect(mapping.paths.refreshToken == "data.refreshToken")
        #expect(mapping.paths.accessToken == "access_token", "unspecified paths keep their RFC names")
        #expect(mapping.terminalStatuses == [401])
        let standard = try JSONDecoder().decode(TokenEndpointMapping.self, from: Data("{}".utf8))
        #expect(standard == .standard)
    }

    @Test func loginAndRefreshWorkAgainstAHeaderTokenServer() async throws {
        let h = try harness()
        let first = try await h.login()
        #expect(first.expiresAt == h.clock.wallNow.addingTimeInterval(600), "expiry read from the JWT exp claim")
        #expect(await h.actor.status.subject == "alice")
        h.clock.advance(by: .seconds(571))  // within the 30 s skew window
        let second = try await h.actor.token()
        #expect(second.generation > first.generation)
        #expect(await h.server.isValid(accessToken: second.value))
        #expect(await h.server.statistics.refreshes == 1)
        h.clock.advance(by: .seconds(600))  // fully expired: the server still wants it as Bearer
        let third = try await h.actor.token()
        #expect(third.generation > second.generation)
        #expect(await h.server.statistics.reuseDetections == 0)
    }

    @Test func refreshRequestCarriesExpiredBearerAndJSONBody() throws {
        let mapping = try JSONDecoder().decode(TokenEndpointMapping.self, from: Data(Self.mappingJSON.utf8))
        let client = OAuth2Client(
            configuration: .init(tokenEndpoint: "https://api.example.test/auth/login", authentication: .none, mapping: mapping),
            transport: ScriptedTransport(), clock: TestClock())
        let request = try client.makeRequest(for: .refreshToken("rt-1", expiredAccessToken: "old.jwt.value"))
        #expect(request.url == "https://api.example.test/auth/refresh")
        #expect(request.header("Authorization") == "Bearer old.jwt.value")
        #expect(request.header("Content-Type") == "application/json")
        let body = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: String]
        #expect(body == ["refreshToken": "rt-1"])
    }

    @Test func bareUnauthorizedFromTheRefreshEndpointEndsTheSession() async throws {
        let h = try harness()
        let first = try await h.login()
        await h.server.revokeAllSessions()
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
        #expect(error?.code == .sessionEnded)
        #expect(error?.logoutReason == .refreshRejected(code: "unexpected_status"))
        #expect(await !h.actor.status.isLoggedIn)
        #expect(h.tokenStore.record(for: .default) == nil)
    }
}
