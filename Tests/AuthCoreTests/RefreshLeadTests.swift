import AuthCore
import AuthGateTesting
import Testing

@Suite struct RefreshLeadTests {
    @Test(arguments: [
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
