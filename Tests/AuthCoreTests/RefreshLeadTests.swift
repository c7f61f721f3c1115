import AuthCore
import AuthGateTesting
import Foundation
import Testing

@Suite struct RefreshLeadTests {
    @Test(
        arguments: [
            (AuthActor.Configuration(skew: .seconds(30), jitter: .zero), 70),
            (AuthActor.Configuration(skew: .seconds(80), jitter: .zero), 50),  // capped at half the lifetime
            (AuthActor.Configuration(jitter: .zero, leadFraction: 0.5), 50),
            (AuthActor.Configuration(jitter: .zero, leadFraction: 0.2), 80),
            (AuthActor.Configuration(jitter: .seconds(60), leadFraction: 0.5), 50),  // jitter ≤ a tenth of the lifetime (r = 0)
        ] as [(AuthActor.Configuration, Int64)])
    func aTokenIsDueAfterItsLifetimeLessTheLead(configuration: AuthActor.Configuration, dueAfter: Int64) async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(100)
        let h = Harness(server: server, actor: configuration)
        let start = h.clock.now
        try await h.login()
        let snapshot = try #require(h.actor.tokenSnapshot)
        #expect(snapshot.refreshAt == start + .seconds(dueAfter))
        #expect(!snapshot.isDue(at: start + .seconds(dueAfter - 1)))
        #expect(snapshot.isDue(at: start + .seconds(dueAfter)))
    }

    @Test(
        arguments: [
            (nil, 2_000),  // nothing measured yet: half-life
            (1_100, 2_900),  // 4 s tokens with a 1.1 s upstream: refreshed 1.1 s before expiry
            (100, 3_600),  // never under a tenth of the lifetime
            (3_000, 2_000),  // never over half of it
        ] as [(Int64?, Int64)])
    func aShortTokenIsRefreshedAsLongBeforeExpiryAsTheUpstreamTakes(latencyMilliseconds: Int64?, dueAfter: Int64)
        async throws
    {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(4)
        var configuration = AuthActor.Configuration(skew: .seconds(30), jitter: .zero)
        configuration.upstreamLatency = { latencyMilliseconds.map { .milliseconds($0) } }
        let h = Harness(server: server, actor: configuration)
        let start = h.clock.now
        try await h.login()
        #expect(h.actor.tokenSnapshot?.refreshAt == start + .milliseconds(dueAfter))
    }

    @Test func aLongTokenKeepsItsLeadWhateverTheUpstreamTakes() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(3_600)
        var configuration = AuthActor.Configuration(skew: .seconds(30), jitter: .zero)
        configuration.upstreamLatency = { .milliseconds(200) }
        let h = Harness(server: server, actor: configuration)
        let start = h.clock.now
        try await h.login()
        #expect(h.actor.tokenSnapshot?.refreshAt == start + .seconds(3_570))
    }

    @Test func theSnapshotFollowsRefreshAndLogout() async throws {
        let h = Harness()
        #expect(h.actor.tokenSnapshot == nil)
        let first = try await h.login()
        #expect(h.actor.tokenSnapshot?.generation == first.generation)
        let second = try await h.actor.refresh(after: first.generation)
        #expect(h.actor.tokenSnapshot?.generation == second.generation)
        try await h.actor.logout()
        #expect(h.actor.tokenSnapshot == nil)
    }
}

@Suite struct LeadAndExpiryTests {
    @Test func aProactiveRefreshAtAnyLeadNeverTripsTheLoopGuard() async throws {
        // 2 s tokens refreshed at 90% lead: a refresh every 0.2 s, 40 of them in 8 s.
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(2)
        let h = Harness(server: server, actor: AuthActor.Configuration(jitter: .zero, leadFraction: 0.9))
        var token = try await h.login()
        for _ in 0..<40 {
            h.clock.advance(by: .milliseconds(200))
            let next = try await h.actor.token()
            #expect(next.generation > token.generation)
            token = next
        }
        #expect(await h.server.statistics.refreshes == 40)
    }

    @Test func jitterMovesAShortTokensRefreshByATenthOfItsLifetimeAtMost() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(4)
        let h = Harness(server: server, actor: AuthActor.Configuration(skew: .zero, jitter: .seconds(5)))
        let start = h.clock.now
        try await h.login()
        // randomFraction is 0 in the harness: the lead is the skew alone.
        #expect(h.actor.tokenSnapshot?.refreshAt == start + .seconds(4))
        let actor = AuthActor(
            client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
            configuration: AuthActor.Configuration(skew: .zero, jitter: .seconds(5)), randomFraction: { 0.999 })
        let at = h.clock.now
        try await actor.login(.password(username: "alice", password: "wonderland"))
        let refreshAt = try #require(actor.tokenSnapshot?.refreshAt)
        #expect(refreshAt >= at + .milliseconds(3600), "at most 0.4 s early, not 5 s")
    }

    @Test func aJWTExpThatIsEarlierThanExpiresInWinsByUpToTwoSeconds() throws {
        let wall = Date(timeIntervalSince1970: 1_800_000_000.7)
        let now = MonotonicInstant(offset: .seconds(50))
        func deadline(expiresIn: Int, exp: Double?) -> Duration? {
            var response = TokenResponse(accessToken: "opaque")
            if let exp {
                let payload = Base64URL.encode(Array(#"{"exp":\#(Int(exp))}"#.utf8))
                response = TokenResponse(accessToken: "eyJhbGciOiJub25lIn0.\(payload).sig")
            }
            response.expiresIn = .seconds(expiresIn)
            let c = Credentials(response: response, previousRefreshToken: nil, generation: .zero, now: now, wallNow: wall)
            return c.deadline.map { $0 - now }
        }
        #expect(deadline(expiresIn: 4, exp: nil) == .seconds(4))
        // exp = ⌊issued⌋ + 4: 0.7 s earlier than expires_in says.
        #expect(deadline(expiresIn: 4, exp: 1_800_000_004) == .milliseconds(3300))
        #expect(deadline(expiresIn: 4, exp: 1_800_003_600) == .seconds(4), "a later exp changes nothing")
        #expect(deadline(expiresIn: 60, exp: 1_799_990_000) == .seconds(58), "a skewed clock moves it 2 s at most")
    }
}

@Suite struct HalfLifeJitterTests {
    @Test func atHalfLifeJitterOnlyDelaysTheRefresh() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(100)
        let h = Harness(server: server)
        let actor = AuthActor(
            client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
            configuration: AuthActor.Configuration(jitter: .seconds(60), leadFraction: 0.5), randomFraction: { 0.999 })
        let start = h.clock.now
        try await actor.login(.password(username: "alice", password: "wonderland"))
        let refreshAt = try #require(actor.tokenSnapshot?.refreshAt)
        #expect(refreshAt >= start + .seconds(50), "never before half-life")
        #expect(refreshAt <= start + .seconds(60), "and at most a tenth of the lifetime after it")
    }
}

/// ``AuthActor/tokenWithoutWaiting()``: the proxy's fast path takes the token from it with
/// no hop onto the actor, so it must hand out exactly what ``AuthActor/token()`` would without
/// refreshing, and nothing when ``AuthActor/token()`` would have work to do first.
@Suite struct TokenWithoutWaitingTests {
    @Test func itIsTheCurrentTokenUntilItIsDueAndNothingWhenLoggedOut() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(100)
        let h = Harness(server: server, actor: AuthActor.Configuration(skew: .seconds(30), jitter: .zero))
        #expect(h.actor.tokenWithoutWaiting() == nil)
        let first = try await h.login()
        #expect(h.actor.tokenWithoutWaiting() == first)
        #expect(try await h.actor.token() == first)
        h.clock.advance(by: .seconds(69))
        #expect(h.actor.tokenWithoutWaiting() == first)
        h.clock.advance(by: .seconds(1))
        // Due: token() refreshes, so the fast path must not hand out the old one.
        #expect(h.actor.tokenWithoutWaiting() == nil)
        let second = try await h.actor.token()
        #expect(second.generation > first.generation)
        #expect(h.actor.tokenWithoutWaiting() == second)
        try await h.actor.logout()
        #expect(h.actor.tokenWithoutWaiting() == nil)
    }

    @Test func nothingWhileARotatedPairWaitsToBeSaved() async throws {
        let h = Harness()
        let first = try await h.login()
        h.tokenStore.failNext(.save, with: AuthError.io(28, operation: "write"))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(h.actor.holdsUnsavedCredentials)
        // token() retries the save before handing out a token; the fast path leaves it that work.
        #expect(h.actor.tokenWithoutWaiting() == nil)
        await h.actor.finishBackgroundWork()
        #expect(h.actor.tokenWithoutWaiting() == second)
    }
}
