import AuthCore
import AuthGateTesting
import Foundation
import Locking
import Logging
import TestSupport
import Testing

/// REFERENCES.md "What their users keep reporting", items 1, 2, 4, 5, 6, 10.
@Suite struct RefreshTests {
    @Test func refreshIsSingleFlightAcrossTenThousandCallersAtExpiry() async throws {
        let h = Harness()
        let first = try await h.login()
        await h.server.holdRefreshes()
        h.clock.advance(by: .seconds(3600))

        let callers = 10_000
        // Unstructured tasks: collecting from a 10,000-child TaskGroup is quadratic in the
        // runtime and would only slow the test down.
        let tasks = (0..<callers).map { _ in Task { try await h.actor.token() } }
        let allWaiting = await eventually { await h.actor.refreshWaiterCount == callers }
        #expect(allWaiting, "every caller joins the one refresh")
        // The callers may all have joined before the refresh request reaches the server.
        #expect(await eventually { await h.server.heldRefreshCount == 1 })
        await h.server.releaseRefreshes()
        var results: [AccessToken] = []
        for task in tasks { results.append(try await task.value) }
        #expect(results.count == callers)
        #expect(Set(results.map(\.value)).count == 1, "every caller gets the same new token")
        #expect(results[0].value != first.value)
        #expect(results[0].generation > first.generation)
        #expect(await h.server.statistics.refreshes == 1)
        #expect(await h.server.statistics.refreshAttempts == 1)
    }

    @Test func rotationWithReuseDetectionIsNeverTriggeredByConcurrentUnauthorizedReplays() async throws {
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.rotatesRefreshTokens = true
        configuration.reuseDetection = true
        configuration.accessTokenLifetime = .seconds(300)
        let h = Harness(
            server: configuration,
            actor: .init(
                skew: .seconds(30), jitter: .zero, refreshWindow: RefreshWindow(interval: .seconds(1), maximumAttempts: 100)))
        try await h.login()
        for round in 0..<20 {
            // Many requests saw a 401 for the same generation at once, while others ask for a token.
            let generation = try await h.actor.token().generation
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        if index.isMultiple(of: 2) {
                            _ = try await h.actor.refresh(after: generation)
                        } else {
                            _ = try await h.actor.token()
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await h.actor.token().generation > generation, "round \(round)")
            h.clock.advance(by: .seconds(round.isMultiple(of: 3) ? 290 : 5))
        }
        let statistics = await h.server.statistics
        #expect(statistics.reuseDetections == 0)
        #expect(await h.actor.status.isLoggedIn)
    }

    @Test func slowRefreshIsNeverDuplicatedHoweverLongItTakes() async throws {
        // oauth2-proxy PR #3456: a lock lease that expires during a slow refresh lets a second
        // refresh through. The in-flight refresh here has no lease: it ends when it ends.
        let h = Harness()
        let first = try await h.login()
        await h.server.inject(.slow(.seconds(600)))
        let early = Task { try await h.actor.refresh(after: first.generation) }
        #expect(await eventually { h.clock.sleeperCount == 1 })
        h.clock.advance(by: .seconds(300))
        let late = (0..<100).map { _ in Task { try await h.actor.refresh(after: first.generation) } }
        #expect(await eventually { await h.actor.refreshWaiterCount == 101 })
        h.clock.advance(by: .seconds(300))
        let token = try await early.value
        for task in late {
            #expect(try await task.value == token)
        }
        #expect(await h.server.statistics.refreshAttempts == 1)
        #expect(await h.server.statistics.refreshes == 1)
    }

    @Test func staleUnauthorizedReturnsCurrentTokenWithoutNetworkCall() async throws {
        let h = Harness()
        let first = try await h.login()
        let second = try await h.actor.refresh(after: first.generation)
        #expect(second.generation > first.generation)
        let requests = await h.server.statistics.requests
        // A request that was sent with the first token comes back 401 late.
        let again = try await h.actor.refresh(after: first.generation)
        #expect(again == second)
        #expect(await h.server.statistics.requests == requests)
    }

    @Test func proactiveRefreshHappensWithinSkewBeforeExpiry() async throws {
        let h = Harness()  // lifetime 3600 s, skew 30 s, no jitter
        let first = try await h.login()
        h.clock.advance(by: .seconds(3569))
        #expect(try await h.actor.token() == first, "outside the skew window: no refresh")
        #expect(await h.server.statistics.refreshes == 0)
        h.clock.advance(by: .seconds(1))
        let second = try await h.actor.token()
        #expect(second.generation > first.generation, "30 s before expiry: refreshed before any 401")
        #expect(await h.server.statistics.refreshes == 1)
        #expect(await h.server.isValid(accessToken: second.value))
    }

    @Test func jitterAddsLeadButNeverMoreThanHalfTheLifetime() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(40)
        let h = Harness(server: server, actor: .init(skew: .seconds(30), jitter: .seconds(60)))
        let first = try await h.login()
        h.clock.advance(by: .seconds(19))
        #expect(try await h.actor.token() == first)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.actor.token().generation > first.generation)
    }

    @Test func wallClockJumpDoesNotTriggerRefresh() async throws {
        let h = Harness()
        let first = try await h.login()
        h.clock.jumpWallClock(by: 7200)
        #expect(try await h.actor.token() == first)
        #expect(await h.server.statistics.refreshes == 0)
    }

    @Test func endlessUnauthorizedLoopIsStoppedByTheRefreshWindow() async throws {
        let h = Harness(
            actor: .init(
                skew: .seconds(30), jitter: .zero, refreshWindow: RefreshWindow(interval: .seconds(30), maximumAttempts: 3)))
        try await h.login()
        var lastError: AuthError?
        for _ in 0..<10 {
            // An upstream that answers 401 to every token.
            do {
                let token = try await h.actor.token()
                _ = try await h.actor.refresh(after: token.generation)
            } catch let error as AuthError {
                lastError = error
                break
            }
        }
        #expect(lastError?.code == .excessiveRefresh)
        #expect(await h.server.statistics.refreshes == 3)
        #expect(await h.actor.status.isLoggedIn, "the guard does not log out")
        h.clock.advance(by: .seconds(30))
        let token = try await h.actor.token()
        #expect(try await h.actor.refresh(after: token.generation).generation > token.generation, "the window reopens")
    }

    @Test func requestWithNoSessionFailsWithLoginRequiredAndSendsNothing() async throws {
        let h = Harness()
        let tokenError = await #expect(throws: AuthError.self) { try await h.actor.token() }
        #expect(tokenError?.code == .loginRequired)
        let refreshError = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: .zero) }
        #expect(refreshError?.code == .loginRequired)
        #expect(await h.server.statistics.requests == 0)
    }

    @Test func cancelledCallerStopsWaitingButTheRefreshCompletesForEveryoneElse() async throws {
        let h = Harness()
        let first = try await h.login()
        await h.server.holdRefreshes()
        let starter = Task { try await h.actor.refresh(after: first.generation) }
        #expect(await eventually { await h.server.heldRefreshCount == 1 })
        let other = Task { try await h.actor.refresh(after: first.generation) }
        #expect(await eventually { await h.actor.refreshWaiterCount == 2 })
        starter.cancel()
        let cancelled = await starter.result
        #expect(throws: CancellationError.self) { try cancelled.get() }
        await h.server.releaseRefreshes()
        let token = try await other.value
        #expect(token.generation > first.generation)
        #expect(await h.server.statistics.refreshes == 1)
        #expect(try await h.actor.token() == token)
    }

    @Test func rotatedPairIsPersistedBeforeAnyWaiterIsResumed() async throws {
        let h = Harness()
        let first = try await h.login()
        await h.server.holdRefreshes()
        let store = h.tokenStore
        let waiters = (0..<50).map { _ in
            Task { () -> Bool in
                let token = try await h.actor.refresh(after: first.generation)
                // At the moment this waiter resumes, the store already holds this token.
                return store.record(for: .default)?.accessToken == token.value
            }
        }
        #expect(await eventually { await h.actor.refreshWaiterCount == 50 })
        await h.server.releaseRefreshes()
        for waiter in waiters {
            #expect(try await waiter.value)
        }
        let record = h.tokenStore.record(for: .default)
        #expect(record?.refreshToken != nil)
        #expect(record?.generation == (try await h.actor.token()).generation)
    }

    @Test func interceptedRefreshCallIsAnsweredInsteadOfDeadlocking() async throws {
        // Alamofire#3509, okhttp#6747: an interceptor that asks for a token is applied to the
        // token endpoint call itself. With an expired token that would wait for itself.
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let transport = InterceptingTransport(inner: server)
        let actor = AuthActor(
            client: OAuth2Client(
                configuration: .init(tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret"),
                transport: transport, clock: clock),
            tokenStore: InMemoryTokenStore(), stateStore: InMemorySessionStateStore(), clock: clock,
            configuration: .init(skew: .seconds(30), jitter: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        transport.attach(actor)
        let first = try await actor.login(.password(username: "alice", password: "wonderland"))
        clock.advance(by: .seconds(3600))
        let second = try await actor.token()
        #expect(second.generation > first.generation)
        #expect(transport.observed == [.loginRequired, .refreshReentered])

        // Inside the skew window but not expired, the interceptor simply gets the current token.
        clock.advance(by: .seconds(3575))
        let third = try await actor.token()
        #expect(third.generation > second.generation)
        #expect(transport.observed == [.loginRequired, .refreshReentered])
        transport.attach(nil)  // the actor and the transport refer to each other
    }

}

/// A transport that, like a careless interceptor, asks the actor for a token before every
/// request, including the refresh request itself.
final class InterceptingTransport: HTTPTransport {
    private let inner: FakeAuthorizationServer
    private let state = Locked<(actor: AuthActor?, observed: [AuthError.Code])>((nil, []))

    init(inner: FakeAuthorizationServer) {
        self.inner = inner
    }

    func attach(_ actor: AuthActor?) {
        state.withLock { $0.actor = actor }
    }

    var observed: [AuthError.Code] { state.withLock { $0.observed } }

    func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        if let actor = state.withLock({ $0.actor }) {
            do {
                _ = try await actor.token()
            } catch let error as AuthError {
                state.withLock { $0.observed.append(error.code) }
            }
        }
        return try await inner.send(request)
    }
}
