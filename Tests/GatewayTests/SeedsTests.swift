import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import Testing
import TestSupport

/// SEEDS.md rows 4–13, end to end over real sockets: fake authorization server and fake
/// API over HTTP, the gateway's proxy and admin listeners, encrypted file stores.
@Suite(.serialized) struct SeedsTests {
    func withStack(
        fake: FakeAuthorizationServer.Configuration = FakeAuthorizationServer.Configuration(),
        configure: (inout GatewayConfiguration) -> Void = { _ in },
        _ body: (Stack) async throws -> Void
    ) async throws {
        try await Stack.run(fake: fake) { stack in
            try await stack.startGateway(configure: configure)
            try await body(stack)
        }
    }

    /// A fake server whose tokens carry no expiry: AuthGate learns a token expired only
    /// from the API's 401, as with servers that omit `expires_in`.
    var silentExpiry: FakeAuthorizationServer.Configuration {
        var c = FakeAuthorizationServer.Configuration()
        c.accessTokenLifetime = .milliseconds(700)
        c.sendsExpiresIn = false
        return c
    }

    @Test func row4RestartRestoresTheSessionWithoutARoundTripAndReadyzSaysReady() async throws {
        let stack = try Stack()
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

    /// Polls `condition` every 20 ms for up to `seconds`.
    func eventually(_ seconds: Double = 5, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
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
            #expect(try await eventually { try await stack.admin("GET", "/readyz", token: nil).text.contains(#""reason":"user_info_pending""#) })
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
        try await withStack(fake: silentExpiry) { stack in
            #expect(try await stack.loginAlice().status == 200)
            try await Task.sleep(for: .milliseconds(900))
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
        // This server's tokens are JWTs whose `exp` has whole seconds: keep the lifetime
        // well above a second so the first token is not already due at login.
        fake.accessTokenLifetime = .seconds(2)
        fake.sendsExpiresIn = false
        let stack = try Stack(fake: fake)
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
        try await Task.sleep(for: .milliseconds(2200))
        #expect(try await stack.proxy("GET", "/api/b").status == 200, "refreshed through the header-token mapping")
        let stats = await stack.authorization.statistics
        #expect(stats.refreshes == 1, "\(stats)")
        await stack.stop()
    }

    @Test func row8RefusedRefreshLogsOutOnceTellsSubscribersAndAnswers401() async throws {
        try await withStack(fake: silentExpiry) { stack in
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
            #expect(try await stack.proxy("GET", "/api/y").text.contains("login-required"))
            let files = try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory)
            #expect(!files.contains { $0.hasSuffix(".sealed") }, "the tokens were deleted from the store")
        }
    }

    @Test func row9ConcurrentRequestsAcrossAnExpiryShareOneRefreshAndNoneIsDropped() async throws {
        try await withStack(fake: silentExpiry) { stack in
            #expect(try await stack.loginAlice().status == 200)
            try await Task.sleep(for: .milliseconds(900))
            let port = stack.proxyPort
            let statuses = await onThreads(200) { i in
                (try? Stack.request(port: port, "GET", "/api/n/\(i)", headers: [], body: ""))?.status ?? 0
            }
            #expect(statuses.filter { $0 == 200 }.count == 200, "\(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count))")
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
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["guest"] as? Bool == false, "login leaves guest mode")
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
                json: #"{"grant_type":"authorization_code","code":"\#(code)","redirect_uri":"app://cb","code_verifier":"\#(pkce.verifier)"}"#)
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
        try await withStack(fake: silentExpiry) { stack in
            #expect(try await stack.loginAlice().status == 200)
            let r = try await stack.proxy("GET", "/admin/panel")
            #expect(r.status == 403)
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
    }

    @Test func configuredStatusesCountAsTokenRejections() async throws {
        // An API that answers an expired token with 419: by default it passes through...
        try await withStack(fake: silentExpiry) { stack in
            stack.api.answerRejectedTokens(status: 419, realm: "fake")
            #expect(try await stack.loginAlice().status == 200)
            try await Task.sleep(for: .milliseconds(900))
            #expect(try await stack.proxy("GET", "/api/x").status == 419)
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
        // ...and once 419 is configured, it is refreshed and replayed.
        try await withStack(fake: silentExpiry, configure: { $0.upstreamRejection = try! UpstreamRejectionPolicy(statuses: [401, 419]) }) {
            stack in
            stack.api.answerRejectedTokens(status: 419, realm: "fake")
            #expect(try await stack.loginAlice().status == 200)
            try await Task.sleep(for: .milliseconds(900))
            #expect(try await stack.proxy("GET", "/api/x").status == 200)
            #expect(await stack.authorization.statistics.refreshes == 1)
        }
    }

    @Test func challengesFromAnotherRealmNeverTriggerARefresh() async throws {
        try await withStack(fake: silentExpiry, configure: { $0.upstreamRejection = try! UpstreamRejectionPolicy(realms: ["api"]) }) {
            stack in
            #expect(try await stack.loginAlice().status == 200)
            try await Task.sleep(for: .milliseconds(900))
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
        try await withStack(fake: silentExpiry) { stack in
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/public/a").status == 200)
            #expect(try await stack.proxy("GET", "/admin/panel").status == 403)
            try await Task.sleep(for: .milliseconds(900))
            #expect(try await stack.proxy("GET", "/api/after-expiry").status == 200)
            await stack.authorization.revokeAllSessions()
            try await Task.sleep(for: .milliseconds(900))
            #expect(try await stack.proxy("GET", "/api/after-revocation").status == 401)
            // A request is counted when its exchange has ended, just after the client has
            // its answer: wait for the third.
            var r = try await stack.admin("GET", "/metrics")
            _ = try await eventually {
                r = try await stack.admin("GET", "/metrics")
                return r.text.contains(#"authgate_request_duration_seconds_count{route="authenticated"} 3"#)
            }
            #expect(r.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
            let lines = Set(r.text.split(separator: "\n").map(String.init))
            for expected in [
                #"authgate_requests_total{route="public",status_class="2xx"} 1"#,
                #"authgate_requests_total{route="authenticated",status_class="2xx"} 1"#,
                #"authgate_requests_total{route="authenticated",status_class="4xx"} 2"#,
                #"authgate_request_duration_seconds_count{route="authenticated"} 3"#,
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
            #expect(lines.contains { $0.hasPrefix(#"authgate_request_duration_seconds_bucket{route="public",le="0.001"}"#) })
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
        try await withStack(fake: silentExpiry) { stack in
            #expect(try await stack.loginAlice().status == 200)
            await stack.authorization.inject(.serverError(status: 503))
            try await Task.sleep(for: .milliseconds(900))
            let r = try await stack.proxy("GET", "/api/during-outage")
            #expect(r.status == 503)
            #expect(r.header("retry-after") != nil)
            #expect(r.text.contains("refresh-unavailable"))
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
        }
    }

    @Test func noIssuedTokenAppearsInLogsMetricsOrAdminAnswers() async throws {
        try await withStack(fake: silentExpiry) { stack in
            #expect(try await stack.loginAlice().status == 200)
            var answers = ""
            for _ in 0..<3 {
                answers += try await stack.proxy("GET", "/api/a").text
                try await Task.sleep(for: .milliseconds(800))
            }
            answers += try await stack.admin("GET", "/auth/session").text
            answers += try await stack.admin("GET", "/metrics").text
            answers += try await stack.admin("POST", "/auth/refresh").text
            await stack.authorization.revokeAllSessions()
            answers += try await stack.proxy("GET", "/api/b").text
            let tokens = stack.api.seenTokens
            #expect(tokens.count >= 2)
            let logs = stack.logs.all
            #expect(!logs.isEmpty)
            for t in tokens {
                #expect(!logs.contains(t), "a token is in the logs")
                #expect(!answers.contains(t), "a token is in an answer")
            }
            #expect(!logs.contains(Stack.adminToken))
            #expect(!logs.contains("s3cret") && !logs.contains("wonderland"))
        }
    }
}
