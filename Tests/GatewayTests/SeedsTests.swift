import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import Locking
import TestSupport
import Testing

/// SEEDS.md rows 4–13, end to end over real sockets: fake authorization server and fake
/// API over HTTP, the gateway's proxy and admin listeners, encrypted file stores.
@Suite(.serialized) struct SeedsTests {
    func withStack(
        fake: FakeAuthorizationServer.Configuration = FakeAuthorizationServer.Configuration(), clock: TestClock? = nil,
        configure: (inout GatewayConfiguration) -> Void = { _ in },
        _ body: (Stack) async throws -> Void
    ) async throws {
        try await Stack.run(fake: fake, clock: clock) { stack in
            try await stack.startGateway(configure: configure)
            try await body(stack)
        }
    }

    /// A fake server whose tokens carry no expiry: AuthGate learns a token expired only
    /// from the API's 401, as with servers that omit `expires_in`.
    ///
    /// Use it with a stack on a ``TestClock`` (`withStack(fake: silentExpiry, clock: TestClock())`):
    /// its tokens then live a minute of a clock only the test moves
    /// (``Stack/expireAccessTokens()``), so a slow machine never expires one by surprise and
    /// counts such as "exactly one refresh" hold however long a request takes.
    var silentExpiry: FakeAuthorizationServer.Configuration {
        var c = FakeAuthorizationServer.Configuration()
        c.accessTokenLifetime = .seconds(60)
        c.sendsExpiresIn = false
        return c
    }

    @Test func row4RestartRestoresTheSessionWithoutARoundTripAndReadyzSaysReady() async throws {
        let stack = try await Stack()
        defer { Task { await stack.stop() } }
        try await stack.startGateway()
        #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
        #expect(try await stack.loginAlice().status == 200)
        await stack.stopGateway()
        let before = await stack.authorization.statistics.requests
        try await stack.startGateway()
        let session = Stack.json(try await stack.admin("GET", "/auth/session"))
        #expect(session["state"] as? String == "logged_in")
        #expect(session["subject"] as? String == "alice")
        #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
        #expect(await stack.authorization.statistics.requests == before, "restore made no call to the authorization server")
        #expect(try await stack.proxy("GET", "/api/after-restart").status == 200)
        await stack.stopGateway()
        // The same files under another key: not ready, with the reason; never a silent empty session.
        try await stack.startGateway(key: try TokenStoreKey(rawBytes: [UInt8](repeating: 7, count: 32)))
        let ready = try await stack.admin("GET", "/readyz", token: nil)
        #expect(ready.status == 503)
        #expect(ready.text.contains(#""reason":"session_not_restored""#))
        #expect(!ready.text.contains("could not be restored"), "the unauthenticated probe says a code, not the error")
        #expect(stack.logs.all.contains("could not be restored") || stack.logs.all.contains("session restore failed"))
        await stack.stop()
    }

    func withUserInfo(_ stack: Stack) -> (inout GatewayConfiguration) -> Void {
        let url = "http://127.0.0.1:\(stack.apiServer.port)/userinfo"
        return { $0.userInfo = UserInfoProbe.Configuration(url: url, maxRetrySeconds: 1) }
    }

    func registration(_ stack: Stack) async throws -> String? {
        Stack.json(try await stack.admin("GET", "/auth/session"))["registration"] as? String
    }

    @Test func row4UserInfoTellsSignedUpFromNeedsSignUp() async throws {
        try await Stack.run { stack in
            try await stack.startGateway(configure: withUserInfo(stack))
            #expect(try await registration(stack) == nil, "no session, no registration")
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await eventually { try await registration(stack) == "signed_up" })
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
            // Another login, for an account the API does not know yet.
            stack.api.answerUserInfo(status: 404)
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await eventually { try await registration(stack) == "needs_sign_up" })
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
            _ = try await stack.admin("POST", "/auth/logout")
            #expect(try await registration(stack) == nil)
        }
    }

    @Test func row4UserInfoOutageKeepsTheSessionAndHoldsReadinessUntilItAnswers() async throws {
        try await Stack.run { stack in
            try await stack.startGateway(configure: withUserInfo(stack))
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await eventually { try await registration(stack) == "signed_up" })
            await stack.stopGateway()
            // Restart during an outage of the API: restored at once, not ready until it answers.
            stack.api.answerUserInfo(status: 503)
            try await stack.startGateway(configure: withUserInfo(stack))
            let ready = try await stack.admin("GET", "/readyz", token: nil)
            #expect(ready.status == 503, "the first probe already waits for the user-info answer")
            #expect(try await registration(stack) == "pending")
            #expect(
                try await eventually {
                    try await stack.admin("GET", "/readyz", token: nil).text.contains(#""reason":"user_info_pending""#)
                })
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
            stack.api.answerUserInfo(status: 200)
            #expect(try await eventually { try await registration(stack) == "signed_up" }, "retried until it answered")
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
            #expect(await stack.authorization.statistics.refreshes == 0, "an outage is not a token problem")
        }
    }

    @Test func row4UserInfoRejectingARefreshedTokenClearsTheTokens() async throws {
        try await Stack.run { stack in
            try await stack.startGateway(configure: withUserInfo(stack))
            let events = stack.gateway.withLock { $0! }.session.events.subscribe()
            stack.api.answerUserInfo(status: 401)
            #expect(try await stack.loginAlice().status == 200)
            var reason: String?
            for await record in events {
                if case .loggedOut(let r, _) = record.event {
                    reason = r.code
                    break
                }
            }
            #expect(reason == "user_info_rejected")
            #expect(await stack.authorization.statistics.refreshes == 1, "one refresh before giving up")
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_out")
            let files = try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory)
            #expect(!files.contains { $0.hasSuffix(".sealed") }, "the tokens were deleted from the store")
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
        }
    }

    @Test func row5AuthenticatedRoutesGetTheTokenAndPublicRoutesPassUntouched() async throws {
        try await withStack { stack in
            #expect(try await stack.loginAlice().status == 200)
            let authed = Stack.json(try await stack.proxy("GET", "/api/me", headers: ["Authorization: Bearer client-own-token"]))
            #expect(authed["status"] as? Int == 200, "the client's own Authorization was replaced by the session's token")
            #expect(authed["authenticated"] as? Bool == true)
            let open = Stack.json(try await stack.proxy("GET", "/public/info"))
            #expect(open["authenticated"] as? Bool == false)
            let passed = Stack.json(try await stack.proxy("GET", "/public/info", headers: ["Authorization: Bearer mine"]))
            #expect(passed["authenticated"] as? Bool == true, "public routes pass the client's Authorization on")
        }
    }

    @Test func row6ExpiredTokenIs401RefreshThenOneReplayWithTheBufferedBody() async throws {
        try await withStack(fake: silentExpiry, clock: TestClock()) { stack in
            #expect(try await stack.loginAlice().status == 200)
            stack.expireAccessTokens()
            let r = try await stack.proxy("POST", "/api/orders", headers: ["Content-Type: text/plain"], body: "twelve bytes")
            let json = Stack.json(r)
            #expect(r.status == 200)
            #expect(json["body_bytes"] as? Int == 12, "the replay carried the same body")
            #expect(await stack.authorization.statistics.refreshes == 1)
            #expect(stack.api.statistics.rejected == 1, "exactly one 401 before the replay")
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains("authgate_replays_total{session=\"default\",outcome=\"replayed\"} 1"))
        }
    }

    @Test func row7HeaderTokenServerWorksFromConfigurationAlone() async throws {
        var fake = FakeAuthorizationServer.Configuration()
        fake.profile = .headerToken
        // This server's tokens are JWTs: their `exp` is all AuthGate learns of their expiry.
        // The fake and the gateway share a manual clock, so the first token is due exactly
        // when the test says, not when a slow machine happens to get there.
        fake.accessTokenLifetime = .seconds(60)
        fake.sendsExpiresIn = false
        try await Stack.run(fake: fake, clock: TestClock()) { stack in
            let mapping = try JSONDecoder().decode(
                TokenEndpointMapping.self,
                from: Data(
                    """
                    { "requestBody": "json", "refreshURL": "http://127.0.0.1:\(stack.authServer.port)/auth/refresh",
                      "omitGrantType": true, "requestFieldNames": { "refresh_token": "refreshToken" },
                      "refreshSendsExpiredAccessToken": true, "accessTokenHeader": "Authorization",
                      "paths": { "refreshToken": "data.refreshToken", "expiresIn": "data.expiresIn" },
                      "terminalStatuses": [401] }
                    """.utf8))
            try await stack.startGateway { c in
                c.authorization.tokenEndpoint = "http://127.0.0.1:\(stack.authServer.port)/auth/login"
                c.authorization.clientAuthentication = "none"
                c.authorization.mapping = mapping
            }
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/api/a").status == 200)
            #expect(await stack.authorization.statistics.refreshes == 0, "the first token is not due yet")
            stack.expireAccessTokens()
            #expect(try await stack.proxy("GET", "/api/b").status == 200, "refreshed through the header-token mapping")
            let stats = await stack.authorization.statistics
            #expect(stats.refreshes == 1, "\(stats)")
            #expect(stats.grants["password"] == 1, "logged in once, through the mapping's login path")
            #expect(
                stack.api.statistics.rejected == 0, "refreshed before use, from the JWT exp: the API never saw the expired token")
            #expect(stack.api.seenTokens.count == 2)
        }
    }

    @Test func row8RefusedRefreshLogsOutOnceTellsSubscribersAndAnswers401() async throws {
        try await withStack(fake: silentExpiry, clock: TestClock()) { stack in
            #expect(try await stack.loginAlice().status == 200)
            let session = stack.gateway.withLock { $0! }.session
            let events = session.events.subscribe()
            await stack.authorization.revokeAllSessions()
            let r = try await stack.proxy("GET", "/api/x")
            #expect(r.status == 401)
            #expect(r.header("content-type") == "application/problem+json")
            #expect(r.text.contains("session-ended"))
            #expect(r.header("www-authenticate") == GatewayProblem.sessionChallenge)
            let state = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(state["state"] as? String == "logged_out")
            var logouts = 0
            for await record in events {
                if case .loggedOut(let reason, _) = record.event {
                    logouts += 1
                    #expect(reason.code == "refresh_rejected")
                    break
                }
            }
            #expect(logouts == 1)
            let after = try await stack.proxy("GET", "/api/y")
            #expect(after.status == 401 && after.text.contains("session-ended"), "the same answer until a login: \(after.text)")
            let files = try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory)
            #expect(!files.contains { $0.hasSuffix(".sealed") }, "the tokens were deleted from the store")
        }
    }

    @Test func row9ConcurrentRequestsAcrossAnExpiryShareOneRefreshAndNoneIsDropped() async throws {
        // Under a sanitizer's load the last of 200 can wait in AuthGate's queue longer than
        // its default 10 s: the test is about the refresh, not the queue's timeout.
        let patient: (inout GatewayConfiguration) -> Void = { $0.routes[1].queueTimeoutSeconds = 3_600 }
        try await withStack(fake: silentExpiry, clock: TestClock(), configure: patient) { stack async throws in
            #expect(try await stack.loginAlice().status == 200)
            stack.expireAccessTokens()
            let port = stack.proxyPort
            let statuses = await onThreads(200) { i in
                (try? Stack.request(port: port, "GET", "/api/n/\(i)", headers: [], body: ""))?.status ?? 0
            }
            #expect(
                statuses.filter { $0 == 200 }.count == 200, "\(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count))")
            #expect(await stack.authorization.statistics.refreshes == 1)
            #expect(await stack.authorization.statistics.reuseDetections == 0)
        }
    }

    @Test func row10And11NoSessionMeansOne401AndNothingUpstream() async throws {
        try await withStack { stack in
            let a = try await stack.proxy("GET", "/api/one")
            let b = try await stack.proxy("POST", "/other/two", body: "x")
            #expect(a.status == 401)
            #expect(b.status == 401)
            #expect(a.text == b.text, "one policy point, one body")
            #expect(a.text.contains("login-required"))
            #expect(a.header("www-authenticate") == GatewayProblem.sessionChallenge, "a 401 names its challenge")
            #expect(stack.api.statistics.accepted + stack.api.statistics.rejected == 0, "nothing reached the API")
        }
    }

    @Test func row12GuestModeServesPublicRoutesOnly() async throws {
        try await withStack { stack in
            let g = Stack.json(try await stack.admin("POST", "/auth/guest"))
            #expect(g["state"] as? String == "guest")
            #expect(try await stack.proxy("GET", "/public/catalog").status == 200)
            #expect(try await stack.proxy("GET", "/api/cart").status == 401)
            #expect(try await stack.loginAlice().status == 200)
            #expect(
                Stack.json(try await stack.admin("GET", "/auth/session"))["guest"] as? Bool == false, "login leaves guest mode")
        }
    }

    @Test func row13LoginWithEachGrantAndClearErrorsForBadInput() async throws {
        try await withStack { stack in
            #expect(try await stack.admin("POST", "/auth/login", json: #"{"grant_type":"client_credentials"}"#).status == 200)
            let pkce = PKCEPair()
            let code = await stack.authorization.issueAuthorizationCode(
                subject: "apple-user", redirectURI: "app://cb", codeChallenge: pkce.challenge)
            let viaCode = try await stack.admin(
                "POST", "/auth/login",
                json:
                    #"{"grant_type":"authorization_code","code":"\#(code)","redirect_uri":"app://cb","code_verifier":"\#(pkce.verifier)"}"#
            )
            #expect(viaCode.status == 200)
            #expect(try await stack.proxy("GET", "/api/with-code").status == 200)
            let imported = try await stack.admin(
                "POST", "/auth/login", json: #"{"grant_type":"import","access_token":"opaque-imported","expires_in":60}"#)
            #expect(imported.status == 200)
            let cases: [(String?, String, Int, String)] = [
                (#"{"grant_type":"password","username":"alice","password":"nope"}"#, "application/json", 401, "login-rejected"),
                (#"{"grant_type":"password","username":"alice"}"#, "application/json", 422, "password"),
                (#"{"grant_type":"magic"}"#, "application/json", 422, "grant_type"),
                (#"{"username":"alice"}"#, "application/json", 422, "grant_type"),
                ("not json", "application/json", 400, "JSON"),
                (#"["array"]"#, "application/json", 422, "object"),
                (#"{"grant_type":"import","access_token":"a","expires_in":-1}"#, "application/json", 422, "expires_in"),
                (#"{"grant_type":"password"}"#, "text/plain", 415, "application/json"),
            ]
            for (body, type, status, mention) in cases {
                let port = stack.adminPort
                let r = try await onThread {
                    try Stack.request(
                        port: port, "POST", "/auth/login",
                        headers: ["Authorization: Bearer \(Stack.adminToken)", "Content-Type: \(type)"], body: body ?? "")
                }
                #expect(r.status == status, "\(body ?? "")")
                #expect(r.header("content-type") == "application/problem+json")
                #expect(r.text.contains(mention), "\(r.text)")
                #expect(!r.text.contains("nope"), "a password is never echoed")
                if status == 401 { #expect(r.header("www-authenticate") == GatewayProblem.sessionChallenge) }
            }
            let wrongToken = try await stack.admin("GET", "/auth/session", token: "wrong")
            #expect(wrongToken.status == 401)
            #expect(wrongToken.header("www-authenticate") == #"Bearer realm="authgate-admin""#, "told apart from a refused login")
            #expect(try await stack.admin("GET", "/auth/session", token: nil).status == 401)
            #expect(try await stack.admin("DELETE", "/auth/login").status == 405)
            #expect(try await stack.admin("GET", "/nowhere").status == 404)
        }
    }

    @Test func insufficientScopeAnd403NeverTriggerARefresh() async throws {
        try await withStack(fake: silentExpiry, clock: TestClock()) { stack in
            #expect(try await stack.loginAlice().status == 200)
            let r = try await stack.proxy("GET", "/admin/panel")
            #expect(r.status == 403)
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
    }

    @Test func configuredStatusesCountAsTokenRejections() async throws {
        // An API that answers an expired token with 419: by default it passes through...
        try await withStack(fake: silentExpiry, clock: TestClock()) { stack async throws in
            stack.api.answerRejectedTokens(status: 419, realm: "fake")
            #expect(try await stack.loginAlice().status == 200)
            stack.expireAccessTokens()
            #expect(try await stack.proxy("GET", "/api/x").status == 419)
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
        // ...and once 419 is configured, it is refreshed and replayed.
        let also419: (inout GatewayConfiguration) -> Void = {
            $0.upstreamRejection = try! UpstreamRejectionPolicy(statuses: [401, 419])
        }
        try await withStack(fake: silentExpiry, clock: TestClock(), configure: also419) { stack async throws in
            stack.api.answerRejectedTokens(status: 419, realm: "fake")
            #expect(try await stack.loginAlice().status == 200)
            stack.expireAccessTokens()
            #expect(try await stack.proxy("GET", "/api/x").status == 200)
            #expect(await stack.authorization.statistics.refreshes == 1)
        }
    }

    @Test func challengesFromAnotherRealmNeverTriggerARefresh() async throws {
        let apiRealm: (inout GatewayConfiguration) -> Void = {
            $0.upstreamRejection = try! UpstreamRejectionPolicy(realms: ["api"])
        }
        try await withStack(fake: silentExpiry, clock: TestClock(), configure: apiRealm) { stack in
            #expect(try await stack.loginAlice().status == 200)
            stack.expireAccessTokens()
            // The fake API names its realm "fake": not ours, so the 401 passes through.
            let foreign = try await stack.proxy("GET", "/api/x")
            #expect(foreign.status == 401)
            #expect(foreign.header("www-authenticate")?.contains("realm=\"fake\"") == true)
            #expect(await stack.authorization.statistics.refreshes == 0)
            stack.api.answerRejectedTokens(status: 401, realm: "api")
            #expect(try await stack.proxy("GET", "/api/x").status == 200)
            #expect(await stack.authorization.statistics.refreshes == 1)
        }
    }

    @Test func metricsCoverRefreshOutcomesReplaysLogoutsStatusClassesAndLatency() async throws {
        try await withStack(fake: silentExpiry, clock: TestClock()) { stack in
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/public/a").status == 200)
            #expect(try await stack.proxy("GET", "/admin/panel").status == 403)
            stack.expireAccessTokens()
            #expect(try await stack.proxy("GET", "/api/after-expiry").status == 200)
            // The refresh token's family is revoked (taking its access tokens with it): the
            // next request is rejected and its refresh refused for good.
            await stack.authorization.revokeAllSessions()
            #expect(try await stack.proxy("GET", "/api/after-revocation").status == 401)
            // A request is counted when its exchange has ended, just after the client has
            // its answer: wait for the third.
            var r = try await stack.admin("GET", "/metrics")
            let counted = try await eventually {
                r = try await stack.admin("GET", "/metrics")
                return r.text.contains(#"authgate_request_duration_seconds_count{route_kind="authenticated"} 3"#)
            }
            #expect(counted, "the third authenticated request was counted")
            #expect(r.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
            let lines = Set(r.text.split(separator: "\n").map(String.init))
            for expected in [
                #"authgate_requests_total{route_kind="public",status_class="2xx"} 1"#,
                #"authgate_requests_total{route_kind="authenticated",status_class="2xx"} 1"#,
                #"authgate_requests_total{route_kind="authenticated",status_class="4xx"} 2"#,
                #"authgate_request_duration_seconds_count{route_kind="authenticated"} 3"#,
                #"authgate_refreshes_total{session="default",outcome="success"} 1"#,
                #"authgate_refreshes_total{session="default",outcome="terminal"} 1"#,
                #"authgate_refreshes_total{session="default",outcome="transient"} 0"#,
                #"authgate_replays_total{session="default",outcome="replayed"} 1"#,
                #"authgate_replays_total{session="default",outcome="refresh_failed"} 1"#,
                #"authgate_logouts_total{session="default",reason="refresh_rejected"} 1"#,
                #"authgate_refreshes_in_flight{session="default"} 0.0"#,
                #"authgate_session_logged_in{session="default"} 0.0"#,
            ] {
                #expect(lines.contains(expected), "\(expected)\n\(r.text)")
            }
            #expect(lines.contains { $0.hasPrefix(#"authgate_request_duration_seconds_bucket{route_kind="public",le="0.001"}"#) })
            #expect(!r.text.contains("alice"), "no subject in a label")
        }
    }

    @Test func adminLogoutRevokesTheTokensAtTheAuthorizationServer() async throws {
        try await Stack.run { stack in
            let endpoint = "http://127.0.0.1:\(stack.authServer.port)/oauth/revoke"
            try await stack.startGateway(configure: { $0.authorization.revocationEndpoint = endpoint })
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/api/x").status == 200)
            let token = try #require(stack.api.seenTokens.first)
            #expect(await stack.authorization.isValid(accessToken: token))
            #expect(Stack.json(try await stack.admin("POST", "/auth/logout"))["state"] as? String == "logged_out")
            #expect(await eventually { await stack.authorization.statistics.revocations == 1 })
            #expect(await !stack.authorization.isValid(accessToken: token), "revoked at the server, not only forgotten")
        }
    }

    @Test func transientRefreshFailureKeepsTheSessionAndAnswers503WithRetryAfter() async throws {
        try await withStack(fake: silentExpiry, clock: TestClock()) { stack in
            #expect(try await stack.loginAlice().status == 200)
            await stack.authorization.inject(.serverError(status: 503))
            stack.expireAccessTokens()
            let r = try await stack.proxy("GET", "/api/during-outage")
            #expect(r.status == 503)
            #expect(r.header("retry-after") != nil)
            #expect(r.text.contains("refresh-unavailable"))
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
            #expect(await stack.authorization.statistics.refreshAttempts == 1)
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
    }

    /// Every secret AuthGate holds — access, refresh and ID tokens, the client secret, the
    /// admin token, the user's password and the store key — stays out of the logs, out of every
    /// answer (problem+json bodies, `/auth/session`, which the OpenAPI description says never
    /// contains a token, `/metrics`, headers), out of the SSE stream, and out of the state
    /// directory's files, where the token store keeps the tokens sealed.
    @Test func noSecretAppearsInLogsAnswersEventsMetricsOrStateFilesInTheClear() async throws {
        var fake = FakeAuthorizationServer.Configuration()
        fake.tokenFormat = .jwt
        fake.issuesIDTokens = true
        fake.accessTokenLifetime = .seconds(60)
        let clock = TestClock()
        let keyBytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try await Stack.run(fake: fake, clock: clock) { stack in
            try await stack.startGateway(key: try TokenStoreKey(rawBytes: keyBytes))
            let events = try await EventStreamRecorder(port: stack.adminPort)
            defer { events.stop() }
            let answers = Locked<[TestResponse]>([])
            func keep(_ r: TestResponse) -> TestResponse {
                answers.withLock { $0.append(r) }
                return r
            }

            // Every path a token takes: login, a proactive refresh at expiry, a refresh after the
            // API's 401 with a replay, a refresh asked for, a transient failure and its recovery.
            let refused = try await keep(
                stack.admin("POST", "/auth/login", json: #"{"grant_type":"password","username":"alice","password":"nope"}"#))
            #expect(refused.status == 401)
            #expect(try await keep(stack.loginAlice()).status == 200)
            #expect(try await keep(stack.proxy("GET", "/api/first")).status == 200)
            stack.expireAccessTokens()
            #expect(try await keep(stack.proxy("GET", "/api/after-expiry")).status == 200)
            await stack.authorization.revokeAccessTokens()
            #expect(try await keep(stack.proxy("POST", "/api/after-revocation", body: "replayed")).status == 200)
            #expect(try await keep(stack.admin("POST", "/auth/refresh")).status == 200)
            await stack.authorization.inject(.serverError(status: 503))
            await stack.authorization.revokeAccessTokens()
            let outage = try await keep(stack.proxy("GET", "/api/during-outage"))
            #expect(outage.status == 503)
            #expect(outage.header("content-type") == "application/problem+json")
            clock.advance(by: .seconds(5))  // past the backoff
            #expect(try await keep(stack.proxy("GET", "/api/after-outage")).status == 200)
            for path in ["/auth/session", "/auth/sessions", "/metrics"] {
                #expect(try await keep(stack.admin("GET", path)).status == 200, "\(path)")
            }
            #expect(try await keep(stack.admin("GET", "/readyz", token: nil)).status == 200)
            #expect(try await keep(stack.admin("GET", "/auth/session", token: "wrong")).status == 401)
            #expect(try await keep(stack.admin("GET", "/auth/session", token: nil)).status == 401)

            // The state directory while the session holds tokens: the sealed file opens with
            // the key and holds the current tokens, so searching its bytes means something.
            let loggedInFiles = try stateFiles(stack.stateDirectory)
            #expect(loggedInFiles.keys.contains { $0.hasSuffix(".sealed") }, "\(loggedInFiles.keys.sorted())")
            #expect(loggedInFiles.keys.contains { $0.hasSuffix(".json") }, "\(loggedInFiles.keys.sorted())")
            let sealed = try await EncryptedFileTokenStore(
                directory: stack.stateDirectory, key: TokenStoreKey(rawBytes: keyBytes)
            )
            .load(for: .default)
            let record = try #require(sealed, "the token store holds the session's tokens")

            // The end of the session: refused for good, then no session at all.
            await stack.authorization.revokeAllSessions()
            let ended = try await keep(stack.proxy("GET", "/api/after-logout"))
            #expect(ended.status == 401 && ended.text.contains("session-ended"), "\(ended.text)")
            let still = try await keep(stack.proxy("GET", "/api/no-session"))
            #expect(still.status == 401 && still.text.contains("session-ended"), "until a login: \(still.text)")
            #expect(await events.waitFor(event: "logged_out"), "\(events.text)")
            #expect(try await keep(stack.admin("GET", "/metrics")).status == 200)
            #expect(try await keep(stack.admin("GET", "/auth/session")).status == 200)
            let loggedOutFiles = try stateFiles(stack.stateDirectory)

            // What there is to find: every secret, non-empty, and the tokens the ones in use.
            let issued = await stack.authorization.issuedSecrets
            #expect(issued.accessTokens.count == 5, "login and four refreshes")
            #expect(issued.refreshTokens.count == 5)
            #expect(issued.idTokens.count == 5)
            #expect(!stack.api.seenTokens.isEmpty && stack.api.seenTokens.isSubset(of: Set(issued.accessTokens)))
            #expect(issued.accessTokens.contains(record.accessToken))
            #expect(record.refreshToken.map(issued.refreshTokens.contains) == true)
            #expect(record.idToken.map(issued.idTokens.contains) == true, "the ID token is kept, sealed")
            var secrets: [(name: String, value: String)] = []
            for (kind, values) in [("access", issued.accessTokens), ("refresh", issued.refreshTokens), ("ID", issued.idTokens)] {
                for (i, value) in values.enumerated() { secrets.append(("\(kind) token #\(i + 1)", value)) }
            }
            secrets += [
                ("client secret", "s3cret"), ("client credentials as Basic", Data("authgate:s3cret".utf8).base64EncodedString()),
                ("admin token", Stack.adminToken), ("password", "wonderland"),
                ("store key (base64)", Data(keyBytes).base64EncodedString()),
                ("store key (base64url)", Base64URL.encode(keyBytes)),
                ("store key (hex)", keyBytes.map { String(format: "%02x", $0) }.joined()),
            ]
            #expect(secrets.allSatisfy { $0.value.count >= 6 }, "nothing to find")
            #expect(Set(secrets.map(\.value)).count == secrets.count, "every secret is distinct")

            // Where they must not be.
            let logs = stack.logs.all
            #expect(stack.logs.lines.withLock { $0.count } > 10, "the gateway logged what it did")
            #expect(logs.contains("refresh"), "refreshes are in the logs: the search covers them")
            let transcript = answers.withLock { $0 }.map(Self.transcript).joined(separator: "\n\n")
            #expect(transcript.contains("refresh-unavailable") && transcript.contains("authgate_refreshes_total"))
            #expect(
                Set(events.eventNames).isSuperset(of: ["state", "logged_in", "refreshed", "refresh_failed", "logged_out"]),
                "\(events.eventNames)")
            var sinks: [(name: String, bytes: [UInt8])] = [
                ("the logs", Array(logs.utf8)), ("the answers", Array(transcript.utf8)),
                ("the event stream", Array(events.text.utf8)),
            ]
            for (name, bytes) in loggedInFiles.sorted(by: { $0.key < $1.key }) { sinks.append(("\(name) (logged in)", bytes)) }
            for (name, bytes) in loggedOutFiles.sorted(by: { $0.key < $1.key }) { sinks.append(("\(name) (logged out)", bytes)) }
            var needles = secrets.map { (name: $0.name, bytes: Array($0.value.utf8)) }
            needles.append(("store key (raw bytes)", keyBytes))

            // The search finds each of them where it is.
            for needle in needles {
                let planted = [("planted", Array("x".utf8) + needle.bytes + Array("y".utf8))]
                #expect(Self.leaks(of: [needle], in: planted) == ["\(needle.name) in planted"])
            }
            #expect(Self.leaks(of: needles, in: sinks).isEmpty)
        }
    }

    /// The files of the state directory by name, with their bytes.
    func stateFiles(_ directory: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            files[name] = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        }
        return files
    }

    /// A response as a client sees it: status, headers and body.
    static func transcript(_ r: TestResponse) -> String {
        (["\(r.status)"] + r.headers.map { "\($0.0): \($0.1)" } + ["", r.text]).joined(separator: "\n")
    }

    /// "secret in sink" for each needle found in a sink.
    static func leaks(of needles: [(name: String, bytes: [UInt8])], in sinks: [(name: String, bytes: [UInt8])]) -> [String] {
        var found: [String] = []
        for sink in sinks {
            let haystack = Data(sink.bytes)
            for needle in needles where haystack.range(of: Data(needle.bytes)) != nil {
                found.append("\(needle.name) in \(sink.name)")
            }
        }
        return found
    }
}
