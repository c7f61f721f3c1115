import AuthCore
import AuthGateTesting
import Foundation
import Logging
import TestSupport
import Testing

/// REFERENCES.md items 3, 4, 8, 11: failures, backoff, logout semantics.
@Suite struct FailureTests {
    @Test func transientFailureKeepsTokensAndHonoursRetryAfter() async throws {
        let h = Harness()
        let log = EventLog(h.actor.events)
        let first = try await h.login()
        await h.server.inject(.tooManyRequests(retryAfterSeconds: 120))
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
        #expect(error?.code == .refreshFailed)
        #expect(error?.retryAfter == .seconds(120))
        #expect(error?.underlyingAuthError?.code == .rateLimited)
        #expect(await h.actor.status.isLoggedIn)
        #expect(h.tokenStore.record(for: .default)?.accessToken == first.value, "tokens kept")

        // During the backoff no request is sent.
        let attempts = await h.server.statistics.refreshAttempts
        h.clock.advance(by: .seconds(119))
        let backingOff = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
        #expect(backingOff?.code == .backingOff)
        #expect(backingOff?.retryAfter == .seconds(1))
        #expect(await h.server.statistics.refreshAttempts == attempts)

        h.clock.advance(by: .seconds(1))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(second.generation > first.generation)
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.map(\.name) == ["state", "logged_in", "refresh_failed", "refreshed"], "no logout, one failure event")
        #expect(events.contains(.refreshFailed(code: "rate_limited", retryAfter: .seconds(120))))
    }

    @Test func absurdRetryAfterBacksOffForTheMaximumOnlyAndZeroStillBacksOff() async throws {
        let h = Harness()
        let first = try await h.login()
        await h.server.inject(.tooManyRequests(retryAfterSeconds: 99_999_999))
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
        #expect(error?.retryAfter == .seconds(300))
        h.clock.advance(by: .seconds(300))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(second.generation > first.generation, "refreshing resumes without a new login")

        await h.server.inject(.tooManyRequests(retryAfterSeconds: 0))
        let zero = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: second.generation) }
        #expect(zero?.retryAfter == .seconds(1))
        let attempts = await h.server.statistics.refreshAttempts
        let backingOff = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: second.generation) }
        #expect(backingOff?.code == .backingOff)
        #expect(await h.server.statistics.refreshAttempts == attempts, "no request during the backoff")
    }

    @Test func backoffJitterComesFromTheInjectedRandomness() async throws {
        let h = Harness(actor: .init(skew: .seconds(30), jitter: .zero, backoff: BackoffPolicy(jitter: 0.5)))
        let actor = AuthActor(
            client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock, configuration: h.configuration,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0.5 })
        let first = try await actor.login(.password(username: "alice", password: "wonderland"))
        await h.server.inject(.serverError(status: 503))
        let error = await #expect(throws: AuthError.self) { try await actor.refresh(after: first.generation) }
        #expect(error?.retryAfter == .milliseconds(1250), "1 s plus half of the 50 % jitter share")
    }

    @Test func backoffGrowsExponentiallyWithoutRetryAfter() async throws {
        let h = Harness(
            actor: .init(
                skew: .seconds(30), jitter: .zero, refreshWindow: RefreshWindow(interval: .seconds(30), maximumAttempts: 10)))
        let first = try await h.login()
        var delays: [Duration] = []
        for _ in 0..<4 {
            await h.server.inject(.serverError(status: 503))
            let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
            delays.append(error?.retryAfter ?? .zero)
            h.clock.advance(by: delays.last!)
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8)])
        let second = try await h.actor.refresh(after: first.generation)
        await h.server.inject(.serverError(status: 500))
        let reset = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: second.generation) }
        #expect(reset?.retryAfter == .seconds(1), "success resets the backoff")
    }

    @Test(arguments: [
        FakeAuthorizationServer.Failure.networkError, .dropAnswerAfterCommit, .serverError(status: 502),
        .nonOAuthBody(status: 400), .nonOAuthBody(status: 403),
    ])
    func networkAndServerErrorsNeverLogOut(failure: FakeAuthorizationServer.Failure) async throws {
        let h = Harness()
        let first = try await h.login()
        await h.server.inject(failure)
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
        #expect(error?.code == .refreshFailed)
        #expect(await h.actor.status.isLoggedIn)
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == true)
        #expect(h.tokenStore.record(for: .default) != nil)
    }

    @Test func proactiveRefreshFailureStillServesTheUnexpiredToken() async throws {
        let h = Harness()
        let first = try await h.login()
        h.clock.advance(by: .seconds(3580))  // inside the skew window, not expired
        await h.server.inject(.networkError)
        #expect(try await h.actor.token() == first)
        h.clock.advance(by: .seconds(30))  // expired, backoff over
        let second = try await h.actor.token()
        #expect(second.generation > first.generation)
    }

    @Test func everyWaiterGetsTheSameErrorWhenTheRefreshFails() async throws {
        let h = Harness()
        let first = try await h.login()
        await h.server.holdRefreshes()
        await h.server.inject(.serverError(status: 500))
        let waiters = (0..<100).map { _ in
            Task { () -> AuthError? in
                do {
                    _ = try await h.actor.refresh(after: first.generation)
                    return nil
                } catch { return error as? AuthError }
            }
        }
        #expect(await eventually { await h.actor.refreshWaiterCount == 100 })
        await h.server.releaseRefreshes()
        for waiter in waiters {
            let error = await waiter.value
            #expect(error?.code == .refreshFailed)
        }
        #expect(await h.server.statistics.refreshAttempts == 1)
    }

    @Test func invalidGrantLogsOutExactlyOncePerEpoch() async throws {
        let h = Harness()
        let log = EventLog(h.actor.events)
        let first = try await h.login()
        await h.server.revokeAllSessions()
        await h.server.holdRefreshes()
        let waiters = (0..<100).map { _ in
            Task { () -> AuthError? in
                do {
                    _ = try await h.actor.refresh(after: first.generation)
                    return nil
                } catch { return error as? AuthError }
            }
        }
        #expect(await eventually { await h.actor.refreshWaiterCount == 100 })
        await h.server.releaseRefreshes()
        for waiter in waiters {
            let error = await waiter.value
            #expect(error?.code == .sessionEnded)
            #expect(error?.logoutReason == .refreshRejected(code: "invalid_grant"))
        }
        // Stray 401s and explicit logouts afterwards change nothing.
        for _ in 0..<5 {
            let stray = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
            #expect(stray?.code == .sessionEnded, "the session ended: told so, with its reason, until a login")
            #expect(stray?.logoutReason == .refreshRejected(code: "invalid_grant"))
            try await h.actor.logout()
        }
        #expect(await !h.actor.status.isLoggedIn)
        #expect(await h.actor.status.logoutReason == .refreshRejected(code: "invalid_grant"))
        #expect(h.tokenStore.record(for: .default) == nil)
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == false)
        #expect(await h.server.statistics.refreshAttempts == 1, "the stray 401s sent nothing")

        // A new login is a new epoch with its own single loggedOut.
        try await h.login()
        try await h.actor.logout()
        try await h.actor.logout()
        // Once the stream has ended, the log holds everything that was published: the
        // second login's events come after the strays', so a stray loggedOut would be there.
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.map(\.name) == ["state", "logged_in", "logged_out", "logged_in", "logged_out"])
        let logouts = events.compactMap { event -> (LogoutReason, UInt64)? in
            if case .loggedOut(let reason, let epoch) = event { (reason, epoch) } else { nil }
        }
        #expect(logouts.map(\.0) == [.refreshRejected(code: "invalid_grant"), .userInitiated])
        #expect(logouts.count == 2 && logouts[0].1 < logouts[1].1, "one loggedOut per epoch")
    }

    @Test func logoutDuringRefreshStaysLoggedOut() async throws {
        let h = Harness()
        let log = EventLog(h.actor.events)
        let first = try await h.login()
        await h.server.holdRefreshes()
        let waiter = Task { try await h.actor.refresh(after: first.generation) }
        #expect(await eventually { await h.server.heldRefreshCount == 1 })
        try await h.actor.logout()
        let error = await #expect(throws: AuthError.self) { try await waiter.value }
        #expect(error?.code == .sessionEnded)
        await h.server.releaseRefreshes()  // the late refresh result arrives now
        // Returns once the refresh task has ended, that is once the actor has handled the
        // late result: what follows is what it decided, not what it had yet to do.
        await h.actor.finishBackgroundWork()
        #expect(await h.server.statistics.refreshes == 1, "the server did rotate")
        #expect(await !h.actor.status.isLoggedIn)
        #expect(h.tokenStore.record(for: .default) == nil, "the late result is not persisted")
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == false)
        let after = await #expect(throws: AuthError.self) { try await h.actor.token() }
        #expect(after?.code == .sessionEnded && after?.logoutReason == .userInitiated)
        let events = await log.drain(h.actor.events)
        #expect(events.map(\.event.name) == ["state", "logged_in", "logged_out"], "nothing refreshed, nothing revived")
    }

    @Test func expiredTokenIsNeverHandedOutWhileTheServerIsDown() async throws {
        // envoy#44674: a stale token injected while the authorization server is down.
        let h = Harness()
        try await h.login()
        h.clock.advance(by: .seconds(3600))
        await h.server.inject(.networkError)
        let error = await #expect(throws: AuthError.self) { try await h.actor.token() }
        #expect(error?.code == .refreshFailed)
        let again = await #expect(throws: AuthError.self) { try await h.actor.token() }
        #expect(again?.code == .backingOff)
        #expect(await h.actor.status.isLoggedIn)
    }

    @Test func refusedLoginWritesNothing() async throws {
        let h = Harness()
        let error = await #expect(throws: AuthError.self) {
            try await h.actor.login(.password(username: "alice", password: "wrong"))
        }
        #expect(error?.code == .loginFailed)
        #expect(error?.underlyingAuthError?.oauthError?.error == "invalid_grant")
        #expect(h.tokenStore.record(for: .default) == nil)
        #expect(h.stateStore.stored(for: .default) == nil)
    }

    @Test func lateRefreshOfAReplacedSessionIsDropped() async throws {
        let h = Harness()
        let log = EventLog(h.actor.events)
        let first = try await h.login()
        await h.server.holdRefreshes()
        let waiter = Task { try await h.actor.refresh(after: first.generation) }
        #expect(await eventually { await h.server.heldRefreshCount == 1 })
        let second = try await h.login()  // a new login replaces the session meanwhile
        let error = await #expect(throws: AuthError.self) { try await waiter.value }
        #expect(error?.logoutReason == .replacedByLogin)
        await h.server.releaseRefreshes()
        // Returns once the refresh task has ended: the late result has been handled.
        await h.actor.finishBackgroundWork()
        #expect(await h.server.statistics.refreshes == 1, "the server did rotate")
        #expect(try await h.actor.token() == second, "the late result of the old session is dropped")
        #expect(h.tokenStore.record(for: .default)?.accessToken == second.value)
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.map(\.name) == ["state", "logged_in", "logged_out", "logged_in"], "one loggedOut, nothing refreshed")
        #expect(events.contains { if case .loggedOut(.replacedByLogin, _) = $0 { true } else { false } })
    }

    @Test func expiredSessionWithoutRefreshTokenLogsOut() async throws {
        let h = Harness()
        try await h.actor.login(importing: TokenResponse(accessToken: "imported", expiresIn: .seconds(60)))
        #expect(try await h.actor.token().value == "imported")
        h.clock.advance(by: .seconds(61))
        let error = await #expect(throws: AuthError.self) { try await h.actor.token() }
        #expect(error?.code == .sessionEnded)
        #expect(error?.logoutReason == .expiredWithoutRefreshToken)
        #expect(await !h.actor.status.isLoggedIn)
    }

    @Test func clientCredentialsSessionRenewsByRunningTheGrantAgain() async throws {
        let h = Harness()
        let first = try await h.actor.login(.clientCredentials(scope: "read"))
        h.clock.advance(by: .seconds(3600))
        let second = try await h.actor.token()
        #expect(second.generation > first.generation)
        #expect(await h.server.statistics.grants["client_credentials"] == 2)
    }
}
