import AuthCore
import AuthGateTesting
import Foundation
import Locking
import Logging
import Testing

/// A token endpoint that takes `latency` of the test clock to answer, issuing tokens that
/// live 60 s from the moment it answers (as a real server issues them mid-request).
final class SlowTokenEndpoint: TokenGrantClient {
    let clock: TestClock
    let latency: Duration
    private let issued = Locked(0)

    init(clock: TestClock, latency: Duration) {
        self.clock = clock
        self.latency = latency
    }

    var count: Int { issued.withLock { $0 } }

    func requestToken(_ grant: Grant) async throws -> TokenResponse {
        clock.advance(by: latency)
        let n = issued.withLock { n -> Int in
            n += 1
            return n
        }
        return TokenResponse(accessToken: "access-\(n)", expiresIn: .seconds(60), refreshToken: "refresh-\(n)")
    }
}

/// REFERENCES.md item 10: a token's lifetime counts from when its request left, so the
/// gateway never holds a token it believes valid after the server stopped accepting it.
@Suite struct TokenLifetimeTests {
    @Test func lifetimeCountsFromTheRequestNotFromTheAnswer() async throws {
        let clock = TestClock()
        let endpoint = SlowTokenEndpoint(clock: clock, latency: .seconds(5))
        let actor = AuthActor(
            client: endpoint, tokenStore: InMemoryTokenStore(), stateStore: InMemorySessionStateStore(), clock: clock,
            configuration: AuthActor.Configuration(skew: .zero, jitter: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0 })
        let start = clock.wallNow
        try await actor.login(.password(username: "alice", password: "wonderland"))
        #expect(await actor.status.expiresAt == start.addingTimeInterval(60), "not 65 s: the answer took 5 s")
        // 56 s after the answer (61 s after the request) the server no longer accepts the
        // token; neither does the actor, which refreshes before using it.
        clock.advance(by: .seconds(56))
        let token = try await actor.token()
        #expect(token.value == "access-2")
        #expect(endpoint.count == 2)
        // The refreshed token's lifetime counts from the refresh request as well.
        let refreshedAt = clock.wallNow
        #expect(await actor.status.expiresAt == refreshedAt.addingTimeInterval(60 - 5))
    }
}
