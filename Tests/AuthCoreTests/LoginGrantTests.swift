import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Testing

/// The grants that need no person: the JWT bearer grant (RFC 7523 §2.1) and token exchange
/// (RFC 8693), each with its credential read from a file before every token request, against
/// the fake server, which checks them as real servers do.
@Suite struct LoginGrantTests {
    static let endpoint = Harness.tokenEndpoint
    let clock = TestClock()
    let issuerKey = P256.Signing.PrivateKey()

    func scratch() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-grant-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A JWT signed by the trusted issuer `workload` (iss = sub = `workload`), for `audience`.
    func workloadJWT(audience: String = Self.endpoint, key: P256.Signing.PrivateKey? = nil, lifetime: Int = 300) throws -> String
    {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/key.pem"
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data((key ?? issuerKey).pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        return try ClientAssertion(
            source: .privateKey(path: path, algorithm: nil, keyID: nil), audience: audience, lifetime: lifetime
        ).make(clientID: "workload", secret: nil, now: clock.wallNow)
    }

    func write(_ text: String, to path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
    }

    func harness(
        jwtBearer: JWTBearerGrantSettings? = nil, tokenExchange: TokenExchangeSettings? = nil, lifetime: Duration = .seconds(120),
        refreshTokens: Bool = false
    ) -> Harness {
        var server = FakeAuthorizationServer.Configuration()
        server.grantsIssueRefreshTokens = refreshTokens
        server.trustedJWTIssuers = ["workload": [.p256(issuerKey.publicKey)]]
        server.exchangeTargets = [
            "orders-api", "reports-api", "https://orders.example.test/", "https://reports.example.test/",
        ]
        server.accessTokenLifetime = lifetime
        server.tokenFormat = .jwt
        return Harness(
            server: server,
            client: .init(
                tokenEndpoint: Self.endpoint, clientID: "authgate", clientSecret: "s3cret", jwtBearer: jwtBearer,
                tokenExchange: tokenExchange),
            clock: clock)
    }

    @Test func theRenewalOfASessionWithoutRefreshTokenIsTheSameGrantAgain() {
        #expect(Grant.renewal(grantType: "client_credentials", scope: "a") == .clientCredentials(scope: "a"))
        #expect(Grant.renewal(grantType: Grant.jwtBearerType, scope: nil) == .jwtBearer(scope: nil))
        #expect(Grant.renewal(grantType: Grant.tokenExchangeType, scope: "b") == .tokenExchange(scope: "b"))
        #expect(Grant.renewal(grantType: "password", scope: nil) == nil)
        #expect(Grant.renewal(grantType: "authorization_code", scope: nil) == nil)
        #expect(Grant.renewal(grantType: nil, scope: nil) == nil)
    }

    @Test func theJWTBearerRequestCarriesTheFileAssertionAndTheClientAuthentication() throws {
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: Self.endpoint, clientID: "authgate", clientSecret: "s3cret", authentication: .post,
                jwtBearer: JWTBearerGrantSettings(assertionFile: "/unused", scope: "orders:read")),
            transport: FakeAuthorizationServer(clock: clock), clock: clock)
        let request = try client.makeRequest(for: .jwtBearer(), grantToken: "h.p.s")
        let fields = Dictionary(
            uniqueKeysWithValues: FormURLEncoding.decodePairs(String(decoding: request.body, as: UTF8.self)) ?? [])
        #expect(
            fields == [
                "grant_type": Grant.jwtBearerType, "assertion": "h.p.s", "scope": "orders:read", "client_id": "authgate",
                "client_secret": "s3cret",
            ])
        let overridden = try client.makeRequest(for: .jwtBearer(scope: "orders:write"), grantToken: "h.p.s")
        #expect(String(decoding: overridden.body, as: UTF8.self).contains("scope=orders%3Awrite"))
        #expect(throws: AuthError.self) { try client.makeRequest(for: .jwtBearer(), grantToken: nil) }
    }

    @Test func jwtBearerLogsInAndRenewsWithTheFileAsItIsAtEachRequest() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/assertion"
        write(try workloadJWT(), to: file)
        let h = harness(jwtBearer: JWTBearerGrantSettings(assertionFile: file))
        try await h.actor.login(.jwtBearer())
        #expect(await h.actor.status.subject == "workload")
        // Three expiries, the file rotated before each: each renewal presents the new one
        // (the server accepts a jti once, so a stale file would be refused).
        for _ in 0..<3 {
            clock.advance(by: .seconds(95))
            write(try workloadJWT(), to: file)
            _ = try await h.actor.token()
        }
        let stats = await h.server.statistics
        #expect(stats.grants[Grant.jwtBearerType] == 4)
        #expect(stats.grantRefusals.isEmpty)
        #expect(await h.actor.status.isLoggedIn)
    }

    @Test func anExpiredOrMalformedAssertionFailsBeforeAnythingIsSentNamingTheFileOnly() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/assertion"
        let h = harness(jwtBearer: JWTBearerGrantSettings(assertionFile: file))
        let missing = await #expect(throws: AuthError.self) { try await h.actor.login(.jwtBearer()) }
        #expect(missing?.code == .loginFailed)
        #expect((missing?.underlying as? AuthError)?.code == .clientCredentialsUnusable)
        let missingText = (missing?.underlying as? AuthError)?.message ?? ""
        #expect(missingText == "the JWT-bearer assertion file \(file) cannot be read")

        write(try workloadJWT(lifetime: 30), to: file)
        clock.advance(by: .seconds(31))
        let expired = await #expect(throws: AuthError.self) { try await h.actor.login(.jwtBearer()) }
        #expect((expired?.underlying as? AuthError)?.message.hasPrefix("the JWT-bearer assertion in \(file) expired") == true)

        write("not-a-jwt-SECRET", to: file)
        let malformed = await #expect(throws: AuthError.self) { try await h.actor.login(.jwtBearer()) }
        let malformedText = (malformed?.underlying as? AuthError)?.message ?? ""
        #expect(malformedText.contains("does not hold one compact JWT") && !malformedText.contains("SECRET"))
        #expect(await h.server.statistics.requests == 0)
    }

    @Test func anAssertionTheServerRefusesIsItsPreciseErrorAndARenewalKeepsTheSession() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/assertion"
        write(try workloadJWT(key: P256.Signing.PrivateKey()), to: file)
        let h = harness(jwtBearer: JWTBearerGrantSettings(assertionFile: file))
        let refused = await #expect(throws: AuthError.self) { try await h.actor.login(.jwtBearer()) }
        let cause = refused?.underlying as? AuthError
        #expect(cause?.oauthError?.error == "invalid_grant")
        #expect(cause?.oauthError?.errorDescription == "the JWT's signature does not verify with the client's registered key")

        write(try workloadJWT(), to: file)
        let first = try await h.actor.login(.jwtBearer())
        // At renewal the file holds an assertion the server refuses: the session keeps its
        // token (the file can be put right), and the next good file renews it.
        write(try workloadJWT(audience: "https://elsewhere.example/token"), to: file)
        clock.advance(by: .seconds(95))
        #expect(try await h.actor.token().generation == first.generation)
        #expect(await h.actor.status.isLoggedIn)
        write(try workloadJWT(), to: file)
        clock.advance(by: .seconds(2))
        #expect(try await h.actor.token().generation > first.generation)
    }

    @Test func tokenExchangeSendsEveryFieldAndReadsTheIssuedType() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/subject"
        write(try workloadJWT() + "\n", to: file)
        let settings = TokenExchangeSettings(
            subjectTokenFile: file, audiences: ["orders-api"], resources: ["https://orders.example.test/"],
            scope: "orders:read", requestedTokenType: TokenExchangeSettings.accessTokenType)
        let h = harness(tokenExchange: settings)
        try await h.actor.login(.tokenExchange())
        let fields = await h.server.statistics.lastExchangeFields
        #expect(
            fields == [
                "grant_type=\(Grant.tokenExchangeType)", "subject_token=<redacted>",
                "subject_token_type=\(TokenExchangeSettings.jwtTokenType)", "audience=orders-api",
                "resource=https://orders.example.test/", "scope=orders:read",
                "requested_token_type=\(TokenExchangeSettings.accessTokenType)",
            ])
        let response = try await h.client.requestToken(.tokenExchange())
        #expect(response.issuedTokenType == TokenExchangeSettings.accessTokenType)
        #expect(response.refreshToken == nil)
    }

    /// RFC 8693 §2.1: `audience` and `resource` may each repeat; every value is a field of
    /// its own, in the order configured, and the server checks each.
    @Test func severalAudiencesAndResourcesAreEachAFieldOfTheirOwn() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/subject"
        write(try workloadJWT(), to: file)
        let settings = TokenExchangeSettings(
            subjectTokenFile: file, audiences: ["orders-api", "reports-api"],
            resources: ["https://orders.example.test/", "https://reports.example.test/"])
        let h = harness(tokenExchange: settings)
        try await h.actor.login(.tokenExchange())
        #expect(
            await h.server.statistics.lastExchangeFields == [
                "grant_type=\(Grant.tokenExchangeType)", "subject_token=<redacted>",
                "subject_token_type=\(TokenExchangeSettings.jwtTokenType)", "audience=orders-api", "audience=reports-api",
                "resource=https://orders.example.test/", "resource=https://reports.example.test/",
            ])
        // One target the server does not serve among several is refused all the same.
        let h2 = harness(
            tokenExchange: TokenExchangeSettings(subjectTokenFile: file, audiences: ["orders-api", "payroll"]))
        let error = await #expect(throws: AuthError.self) { try await h2.actor.login(.tokenExchange()) }
        #expect((error?.underlying as? AuthError)?.oauthError?.error == "invalid_target")
        #expect(await h2.server.statistics.grantRefusals == ["audience is not a service this server issues tokens for"])
    }

    /// The fake as RFC 8693 §2.1 and RFC 6749 §3.2 have a server: `audience` and `resource`
    /// repeat, any other parameter given twice is refused.
    @Test func theFakeRefusesAnyOtherRepeatedExchangeParameter() async throws {
        let h = harness(tokenExchange: TokenExchangeSettings(subjectTokenFile: "/unused"))
        let subject = try workloadJWT()
        let basic = "Basic " + Data("authgate:s3cret".utf8).base64EncodedString()
        func exchange(_ extra: String) async -> HTTPResponseValue {
            let body =
                "grant_type=\(FormURLEncoding.encode(Grant.tokenExchangeType))&subject_token=\(subject)"
                + "&subject_token_type=\(FormURLEncoding.encode(TokenExchangeSettings.jwtTokenType))" + extra
            return await h.server.handle(
                HTTPRequestValue(
                    method: "POST", url: Self.endpoint,
                    headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", basic)],
                    body: Array(body.utf8)))
        }
        #expect(await exchange("&audience=orders-api&audience=reports-api").status == 200)
        let twice = await exchange("&scope=a&scope=b")
        #expect(twice.status == 400 && String(decoding: twice.body, as: UTF8.self).contains("scope given more than once"))
    }

    @Test func anExchangedSessionKeepsItsIssuedTokenTypeThroughRefreshAndRestart() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/subject"
        write(try workloadJWT(), to: file)
        let h = harness(tokenExchange: TokenExchangeSettings(subjectTokenFile: file), refreshTokens: true)
        try await h.actor.login(.tokenExchange())
        #expect(await h.actor.status.issuedTokenType == TokenExchangeSettings.accessTokenType)
        #expect(h.tokenStore.record(for: .default)?.issuedTokenType == TokenExchangeSettings.accessTokenType)
        // A refresh answer (RFC 6749 §5.1) names no issued_token_type: the session's stays.
        clock.advance(by: .seconds(95))
        _ = try await h.actor.token()
        #expect(await h.server.statistics.refreshAttempts == 1)
        #expect(await h.actor.status.issuedTokenType == TokenExchangeSettings.accessTokenType)
        #expect(h.tokenStore.record(for: .default)?.issuedTokenType == TokenExchangeSettings.accessTokenType)
        let restarted = h.restarted()
        #expect(try await restarted.restore().issuedTokenType == TokenExchangeSettings.accessTokenType)
        // Another grant's session has none.
        try await restarted.login(.password(username: "alice", password: "wonderland"))
        #expect(await restarted.status.issuedTokenType == nil)
        #expect(h.tokenStore.record(for: .default)?.issuedTokenType == nil)
    }

    @Test func aSessionWithoutRefreshTokenExchangesAgainBeforeEachExpiry() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/subject"
        write(try workloadJWT(lifetime: 300), to: file)
        let h = harness(tokenExchange: TokenExchangeSettings(subjectTokenFile: file))
        var token = try await h.actor.login(.tokenExchange())
        for _ in 0..<4 {
            clock.advance(by: .seconds(95))
            write(try workloadJWT(lifetime: 300), to: file)
            let next = try await h.actor.token()
            #expect(next.generation > token.generation)
            token = next
        }
        #expect(await h.server.statistics.grants[Grant.tokenExchangeType] == 5)
        #expect(await h.server.statistics.refreshAttempts == 0)
    }

    @Test func aTargetTheServerRefusesIsInvalidTarget() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/subject"
        write(try workloadJWT(), to: file)
        let h = harness(tokenExchange: TokenExchangeSettings(subjectTokenFile: file, audiences: ["payroll"]))
        let error = await #expect(throws: AuthError.self) { try await h.actor.login(.tokenExchange()) }
        #expect((error?.underlying as? AuthError)?.oauthError?.error == "invalid_target")
    }

    @Test func anExchangeAnswerWithoutIssuedTokenTypeOrWithNAIsRefused() throws {
        let client = OAuth2Client(
            configuration: .init(tokenEndpoint: Self.endpoint, tokenExchange: TokenExchangeSettings(subjectTokenFile: "/x")),
            transport: FakeAuthorizationServer(clock: clock), clock: clock)
        func answer(_ json: String) -> HTTPResponseValue {
            HTTPResponseValue(status: 200, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
        }
        let missing = #expect(throws: AuthError.self) {
            try client.parse(answer(#"{"access_token":"a","token_type":"Bearer"}"#), for: .tokenExchange(), now: Date())
        }
        #expect(missing?.code == .malformedResponse && "\(missing!)".contains("issued_token_type"))
        let notAccess = #expect(throws: AuthError.self) {
            try client.parse(
                answer(#"{"access_token":"a","token_type":"N_A","issued_token_type":"urn:x"}"#), for: .tokenExchange(),
                now: Date())
        }
        #expect("\(notAccess!)".contains("N_A"))
        // Other grants do not need it.
        #expect(throws: Never.self) {
            try client.parse(answer(#"{"access_token":"a","token_type":"Bearer"}"#), for: .clientCredentials(), now: Date())
        }
    }

    @Test func anOpaqueSubjectTokenIsOneLineOfVisibleASCII() throws {
        let settings = TokenExchangeSettings(subjectTokenFile: "/t", subjectTokenType: TokenExchangeSettings.accessTokenType)
        #expect(try settings.subjectToken(now: Date(), read: { _ in Data("at_abc\n".utf8) }) == "at_abc")
        #expect(throws: AuthError.self) {
            try settings.subjectToken(now: Date(), read: { _ in Data("two words".utf8) })
        }
    }
}
