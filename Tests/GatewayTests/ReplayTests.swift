import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import Locking
import TestSupport
import Testing

/// The replay rule end to end, against a fake authorization server that revokes the
/// previous access token when it rotates (as real servers do) and an API whose answer waits
/// on a hook, so that rotations happen while a request is at the API — deterministically.
@Suite struct ReplayTests {
    var revoking: FakeAuthorizationServer.Configuration {
        var c = FakeAuthorizationServer.Configuration()
        c.revokesPreviousAccessTokens = true
        return c
    }

    /// Rotates the gateway's session (one refresh at the authorization server).
    static func rotate(_ stack: Stack) async {
        guard let session = stack.gateway.withLock({ $0?.session }), let g = session.tokenSnapshot?.generation else { return }
        _ = try? await session.refresh(after: g)
    }

    @Test func aReplayRejectedBecauseItsTokenWasRotatedMeanwhileIsReplayedAgain() async throws {
        try await Stack.run(fake: revoking) { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            // The first try and the first replay each meet a rotation while at the API.
            stack.api.beforeCheckingTokens { n in if n <= 2 { await Self.rotate(stack) } }
            let r = try await stack.proxy("POST", "/api/orders", headers: ["Content-Type: text/plain"], body: "twelve bytes")
            #expect(r.status == 200, "\(r.status) \(r.text)")
            #expect(Stack.json(r)["body_bytes"] as? Int == 12)
            #expect(stack.api.statistics.rejected == 2)
            let stats = await stack.authorization.statistics
            #expect(stats.refreshes == 2, "only the two rotations: the stale 401s refreshed nothing")
            #expect(stats.reuseDetections == 0)
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_replays_total{session="default",outcome="replayed"} 2"#))
            // Where the request spent its time: one token read, three tries, two waits for a token.
            #expect(metrics.contains(#"authgate_exchange_phase_seconds_count{phase="token"} 1"#))
            #expect(metrics.contains(#"authgate_exchange_phase_seconds_count{phase="upstream"} 3"#))
            #expect(metrics.contains(#"authgate_exchange_phase_seconds_count{phase="refresh"} 2"#))
        }
    }

    @Test func aCurrentTokenLeavesWithoutATaskAndItsRejectionIsStillRefreshedOnceAndReplayed() async throws {
        try await Stack.run(fake: revoking) { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            let tasks = try #require(stack.gateway.withLock { $0?.proxyTasks })
            let before = tasks.started
            for _ in 0..<5 { #expect(try await stack.proxy("GET", "/api/orders").status == 200) }
            #expect(tasks.started == before, "a request whose token is current is sent from its loop, with no task")
            // The first try meets a rotation at the API: its 401 goes on to a replay in a task.
            let seen = stack.api.statistics.accepted + stack.api.statistics.rejected
            stack.api.beforeCheckingTokens { n in if n == seen + 1 { await Self.rotate(stack) } }
            let r = try await stack.proxy("POST", "/api/orders", headers: ["Content-Type: text/plain"], body: "twelve bytes")
            #expect(r.status == 200, "\(r.status) \(r.text)")
            #expect(Stack.json(r)["body_bytes"] as? Int == 12)
            #expect(tasks.started == before + 1)
            #expect(stack.api.statistics.rejected == 1)
            #expect(await stack.authorization.statistics.refreshes == 1, "the rotation only: the stale 401 refreshed nothing")
        }
    }

    /// A chunked body that ends within `replayLimitBytes` is read whole (its framing checked)
    /// before anything goes upstream, so it is replayed like one with a length; a longer one is
    /// streamed once past the bound, and its 401 passes through.
    @Test func aChunkedBodyWithinTheReplayLimitIsReplayedAndALongerOneStreams() async throws {
        try await Stack.run(fake: revoking) { stack in
            try await stack.startGateway { $0.replayLimitBytes = 64 }
            #expect(try await stack.loginAlice().status == 200)
            let port = stack.proxyPort
            func post(_ chunks: [String]) async throws -> TestResponse {
                try await onThread {
                    let c = try RawClient(port: port, timeoutSeconds: 180)
                    var text =
                        "POST /api/orders HTTP/1.1\r\nHost: test\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                    for chunk in chunks { text += String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n" }
                    try c.send(text + "0\r\n\r\n")
                    return try c.readResponse()
                }
            }
            stack.api.beforeCheckingTokens { n in if n == 1 { await Self.rotate(stack) } }
            let small = try await post(["twelve", " bytes"])
            #expect(small.status == 200, "\(small.status) \(small.text)")
            #expect(Stack.json(small)["body_bytes"] as? Int == 12, "the replay carried the whole body")
            #expect(stack.api.statistics.rejected == 1)

            stack.api.beforeCheckingTokens { _ in await Self.rotate(stack) }
            let large = try await post([String(repeating: "x", count: 40), String(repeating: "y", count: 40)])
            #expect(large.status == 401)
            #expect(large.header("AuthGate-Replay")?.hasPrefix("skipped; the request body was streamed") == true)
            #expect(stack.api.statistics.rejected == 2, "the streamed body was sent once")
        }
    }

    @Test func replaysStopAtMaxReplaysAndTheClientIsToldWhy() async throws {
        try await Stack.run(fake: revoking) { stack in
            try await stack.startGateway { $0.maxReplays = 2 }
            #expect(try await stack.loginAlice().status == 200)
            stack.api.beforeCheckingTokens { _ in await Self.rotate(stack) }
            let r = try await stack.proxy("GET", "/api/orders")
            #expect(r.status == 401)
            #expect(r.header("AuthGate-Replay")?.hasPrefix("exhausted") == true)
            #expect(stack.api.statistics.rejected == 3, "the first try and two replays")
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_replays_total{session="default",outcome="replay_limit"} 1"#))
        }
    }

    @Test func aFreshlyRefreshedTokenRejectedAgainPassesThroughWithoutAnotherRefresh() async throws {
        try await Stack.run(fake: revoking) { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            // The API revokes every access token before checking: even a just-refreshed one.
            let authorization = stack.authorization
            stack.api.beforeCheckingTokens { _ in await authorization.revokeAccessTokens() }
            let r = try await stack.proxy("GET", "/api/orders")
            #expect(r.status == 401)
            #expect(r.header("AuthGate-Replay")?.contains("freshly refreshed") == true)
            #expect(await stack.authorization.statistics.refreshes == 1, "one refresh, never a loop")
            #expect(stack.api.statistics.rejected == 2)
            let status = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(status["state"] as? String == "logged_in", "a rejected fresh token is not a reason to log out")
        }
    }

    @Test func aProactiveRefreshAtHalfLifeFailsNoRequestInFlightWithTheOldToken() async throws {
        var fake = revoking
        fake.accessTokenLifetime = .seconds(2)
        let clock = TestClock()
        try await Stack.run(fake: fake, clock: clock) { stack in
            try await stack.startGateway(session: AuthActor.Configuration(jitter: .zero, leadFraction: 0.5))
            #expect(try await stack.loginAlice().status == 200)
            // The first request waits at the API while its token reaches half-life (on the
            // clock the fake and the gateway share), then a second request takes the token
            // (refreshing it early, which revokes the first one's).
            // What the hook saw, checked after the request (the hook runs on the API's loop).
            let seen = Locked<(dueAtHalfLife: Bool, early: String?)>((false, nil))
            stack.api.beforeCheckingTokens { n in
                guard n == 1, let session = stack.gateway.withLock({ $0?.session }) else { return }
                let before = session.tokenSnapshot
                clock.advance(by: .seconds(1))
                let due = before.map { !$0.isDue(at: session.now - .milliseconds(1)) && $0.isDue(at: session.now) } ?? false
                var early: String?
                do { early = try await session.token().generation.description } catch { early = "\(error)" }
                seen.withLock { $0 = (due, early) }
            }
            let r = try await stack.proxy("GET", "/api/orders")
            #expect(r.status == 200, "\(r.status) \(r.text)")
            let stats = await stack.authorization.statistics
            #expect(stats.refreshes == 1)
            #expect(stats.reuseDetections == 0)
            #expect(stack.api.statistics.rejected == 1, "the in-flight request met the revocation and was replayed")
            #expect(seen.withLock { $0.dueAtHalfLife }, "the token fell due at half-life, not before")
            #expect(seen.withLock { $0.early } == "g2", "the second request got the early refresh's token")
        }
    }

    @Test func theUserInfoCallReplaysASupersededTokenLikeTheProxy() async throws {
        try await Stack.run(fake: revoking) { stack in
            let port = stack.apiServer.port
            try await stack.startGateway { $0.userInfo = .init(url: "http://127.0.0.1:\(port)/userinfo") }
            stack.api.beforeCheckingTokens { n in if n <= 2 { await Self.rotate(stack) } }
            #expect(try await stack.loginAlice().status == 200)
            var registration: String?
            _ = try await eventually {
                registration = Stack.json(try await stack.admin("GET", "/auth/session"))["registration"] as? String
                return registration != "pending" && registration != nil
            }
            #expect(registration == "signed_up")
            #expect(stack.api.statistics.rejected == 2)
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
        }
    }
}

/// The token endpoint's own timeout bounds how long a request waits on a refresh.
@Suite struct TokenEndpointTimeoutTests {
    @Test func aRequestWaitingOnAHungRefreshIsAnsweredWhenTheTokenEndpointTimesOut() async throws {
        try await Stack.run { stack in
            // The login goes through the same token client: it logs in under the default
            // timeout, which no loaded run outlasts, and the gateway restarts with the short
            // one, restoring the session from its state directory without a round trip.
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            await stack.stopGateway()
            try await stack.startGateway { $0.tokenEndpointTimeoutSeconds = 1 }
            await stack.authorization.revokeAccessTokens()
            await stack.authorization.holdRefreshes()
            // The upstream rejects the token; the refresh hangs at the authorization server;
            // the client's own read timeout is 10 s, the upstream's 60 s.
            let r = try await stack.proxy("GET", "/api/orders")
            #expect(r.status == 503, "\(r.status) \(r.text)")
            #expect(r.header("Content-Type") == "application/problem+json")
            #expect(r.header("Retry-After") != nil)
            let status = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(status["state"] as? String == "logged_in", "a refresh that timed out keeps the session")
            // Let the held refresh finish at the server, so nothing outlives the test.
            await stack.authorization.releaseRefreshes()
        }
    }
}
