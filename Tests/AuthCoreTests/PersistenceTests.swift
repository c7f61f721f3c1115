import AuthCore
import AuthGateTesting
import Foundation
import Testing

/// Restore, write ordering across crashes, and REFERENCES.md item 3 (killed mid-refresh).
@Suite struct PersistenceTests {
    @Test func restoreBringsTheSessionBackWithoutNetwork() async throws {
        let h = Harness()
        let token = try await h.login()
        let requests = await h.server.statistics.requests
        let restarted = h.restarted()
        let status = try await restarted.restore()
        #expect(status.isLoggedIn)
        #expect(status.subject == "alice")
        #expect(try await restarted.token() == token)
        #expect(await h.server.statistics.requests == requests)
    }

    @Test func restoredExpiryUsesTheStoredWallClockExpiry() async throws {
        let h = Harness()
        let first = try await h.login()
        h.clock.advance(by: .seconds(3000))
        let restarted = h.restarted()
        try await restarted.restore()
        #expect(try await restarted.token() == first)
        h.clock.advance(by: .seconds(570))  // 30 s before expiry
        #expect(try await restarted.token().generation > first.generation)
    }

    @Test func stateLoggedInWithoutTokensRestoresAsLoggedOut() async throws {
        let h = Harness()
        h.stateStore.setStored(SessionState(isLoggedIn: true, subject: "alice"), for: .default)
        let status = try await h.actor.restore()
        #expect(!status.isLoggedIn)
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == false, "the state is corrected on disk")
    }

    @Test func leftoverTokensWithoutLoggedInStateAreDeleted() async throws {
        let h = Harness()
        try await h.login()
        h.stateStore.setStored(.loggedOut, for: .default)
        let restarted = h.restarted()
        #expect(try await !restarted.restore().isLoggedIn)
        #expect(h.tokenStore.record(for: .default) == nil)
    }

    @Test func unreadableTokenStoreIsAnErrorNotAnEmptySession() async throws {
        let h = Harness()
        try await h.login()
        h.tokenStore.failNext(.load, with: AuthError.store(.wrongKey, .tokens, account: .default))
        let restarted = h.restarted()
        let error = await #expect(throws: AuthError.self) { try await restarted.restore() }
        #expect(error?.code == .storage)
        #expect(error?.underlyingAuthError?.code == .wrongKey)
        #expect(h.tokenStore.record(for: .default) != nil, "nothing is deleted")
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == true)
    }

    @Test func guestModeIsPersistedAndClearedByLogin() async throws {
        let h = Harness()
        try await h.actor.setGuestMode(true)
        #expect(await h.actor.status.isGuest)
        let restarted = h.restarted()
        #expect(try await restarted.restore().isGuest)
        let guestError = await #expect(throws: AuthError.self) { try await restarted.token() }
        #expect(guestError?.code == .loginRequired, "a guest has no token")
        try await restarted.login(.password(username: "alice", password: "wonderland"))
        #expect(await !restarted.status.isGuest)
        #expect(h.stateStore.stored(for: .default)?.isGuest == false)
    }

    // MARK: Crash points

    @Test func crashAfterLoginSavedTokensButBeforeStateLeavesNoHalfSession() async throws {
        let h = Harness()
        h.stateStore.failNextSave()  // the process "dies" between the two writes
        let error = await #expect(throws: AuthError.self) { try await h.login() }
        #expect(error?.code == .storage)
        #expect(await !h.actor.status.isLoggedIn)
        // Simulate the worst case: the compensating token delete did not happen either.
        try await h.tokenStore.save(
            TokenRecord(
                accessToken: "orphan", refreshToken: "orphan", expiresAt: nil, issuedAt: Date(), generation: TokenGeneration(1)),
            for: .default)
        let restarted = h.restarted()
        #expect(try await !restarted.restore().isLoggedIn)
        #expect(h.tokenStore.record(for: .default) == nil)
    }

    @Test func failedTokenSaveAtLoginNeverWritesLoggedInState() async throws {
        let h = Harness()
        h.tokenStore.failNext(.save, with: AuthError.io(28, operation: "write"))
        let error = await #expect(throws: AuthError.self) { try await h.login() }
        #expect(error?.code == .storage)
        #expect(h.stateStore.stored(for: .default) == nil)
        #expect(await !h.actor.status.isLoggedIn)
    }

    @Test func crashDuringLogoutBetweenStateAndTokenDeleteRestoresLoggedOut() async throws {
        let h = Harness()
        try await h.login()
        h.tokenStore.failNext(.delete, with: AuthError.io(5, operation: "unlink"))
        let error = await #expect(throws: AuthError.self) { try await h.actor.logout() }
        #expect(error?.code == .storage)
        #expect(await !h.actor.status.isLoggedIn, "logged out in memory even when a store fails")
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == false)
        #expect(h.tokenStore.record(for: .default) != nil)
        let restarted = h.restarted()
        #expect(try await !restarted.restore().isLoggedIn)
        #expect(h.tokenStore.record(for: .default) == nil)
    }

    @Test func crashDuringLogoutBeforeStateWriteRestoresTheOldSession() async throws {
        // State write failed: on disk the session is still fully logged in (tokens and state).
        let h = Harness()
        let token = try await h.login()
        h.stateStore.failNextSave()
        h.tokenStore.failNext(.delete, with: AuthError.io(5, operation: "unlink"))
        let error = await #expect(throws: AuthError.self) { try await h.actor.logout() }
        #expect(error?.code == .storage)
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == true)
        #expect(h.tokenStore.record(for: .default) != nil, "never state logged in without tokens")
        // The next start finds the whole session on disk and restores it.
        let restarted = h.restarted()
        #expect(try await restarted.restore().isLoggedIn)
        #expect(try await restarted.token() == token)
    }

    @Test(arguments: [true, false])
    func killedBetweenServerRotationAndPersistence(graceWindow: Bool) async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.rotatesRefreshTokens = true
        server.reuseDetection = true
        server.reuseGraceWindow = graceWindow ? .seconds(60) : nil
        let h = Harness(server: server)
        let first = try await h.login()
        // The server rotates, then the save of the new pair fails: as if the process died
        // between the server's answer and persistence.
        h.tokenStore.failNext(.save, with: AuthError.io(28, operation: "write"))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(second.generation > first.generation, "the running process keeps serving the new pair")
        #expect(h.tokenStore.record(for: .default)?.accessToken == first.value, "disk still has the old pair")

        // Restart (the in-memory pair is lost) within the grace window.
        h.clock.advance(by: .seconds(10))
        let restarted = h.restarted()
        try await restarted.restore()
        let outcome: Result<AccessToken, any Error>
        do {
            outcome = .success(try await restarted.refresh(after: first.generation))
        } catch {
            outcome = .failure(error)
        }
        let statistics = await h.server.statistics
        if graceWindow {
            #expect(throws: Never.self) { try outcome.get() }
            #expect(statistics.reuseDetections == 0)
            #expect(statistics.graceReuses == 1)
            #expect(await restarted.status.isLoggedIn)
        } else {
            // Without a grace window the server sees reuse and revokes the family: the
            // session ends cleanly (one loggedOut), the user must log in again.
            #expect(statistics.reuseDetections == 1)
            #expect(await !restarted.status.isLoggedIn)
        }
    }

    @Test func unpersistedRotatedPairIsSavedOnTheNextTokenCall() async throws {
        let h = Harness()
        let first = try await h.login()
        h.tokenStore.failNext(.save, with: AuthError.io(28, operation: "write"))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(h.tokenStore.record(for: .default)?.accessToken == first.value)
        #expect(try await h.actor.token() == second)
        #expect(h.tokenStore.record(for: .default)?.accessToken == second.value)
    }

    @Test func persistingAPendingPairBacksOffWhileTheStoreKeepsFailing() async throws {
        let h = Harness()
        let first = try await h.login()
        let diskFull = AuthError.io(28, operation: "write")
        h.tokenStore.failNext(.save, with: diskFull, count: 3)
        let second = try await h.actor.refresh(after: first.generation)  // save 1 fails
        #expect(try await h.actor.token() == second)  // retry now: save 2 fails, next in 1 s
        for _ in 0..<100 { _ = try await h.actor.token() }  // no write attempts meanwhile
        #expect(h.tokenStore.record(for: .default)?.accessToken == first.value)
        h.clock.advance(by: .seconds(1))
        _ = try await h.actor.token()  // save 3 fails, next in 2 s
        h.clock.advance(by: .seconds(1))
        _ = try await h.actor.token()  // too early
        #expect(h.tokenStore.record(for: .default)?.accessToken == first.value)
        h.clock.advance(by: .seconds(1))
        _ = try await h.actor.token()  // succeeds
        #expect(h.tokenStore.record(for: .default)?.accessToken == second.value)
    }

    @Test func droppedAnswerAfterRotationIsRecoveredInsideTheGraceWindow() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.reuseGraceWindow = .seconds(30)
        let h = Harness(server: server)
        let first = try await h.login()
        await h.server.inject(.dropAnswerAfterCommit)
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
        #expect(error?.underlyingAuthError?.disposition == .ambiguous)
        h.clock.advance(by: .seconds(1))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(second.generation > first.generation)
        #expect(await h.server.statistics.reuseDetections == 0)
    }
}

@Suite struct ShutdownFlushTests {
    @Test func aRotatedPairHeldOnlyInMemoryIsSavedAtShutdownDespiteTheBackoff() async throws {
        let h = Harness()
        let first = try await h.login()
        h.tokenStore.failNext(.save, with: AuthError.io(28, operation: "write"))
        let second = try await h.actor.refresh(after: first.generation)
        #expect(h.actor.holdsUnsavedCredentials)
        #expect(h.tokenStore.record(for: .default)?.generation == first.generation)
        // The disk has room again; the backoff would wait a second, shutdown does not.
        await h.actor.finishBackgroundWork()
        #expect(!h.actor.holdsUnsavedCredentials)
        #expect(h.tokenStore.record(for: .default)?.generation == second.generation)
        let restarted = h.restarted()
        #expect(try await restarted.restore().generation == second.generation)
    }

    @Test func aFlushThatFailsSaysSo() async throws {
        let h = Harness()
        let first = try await h.login()
        h.tokenStore.failNext(.save, with: AuthError.io(28, operation: "write"), count: 2)
        _ = try await h.actor.refresh(after: first.generation)
        #expect(await h.actor.flushPendingCredentials() == false)
        #expect(h.actor.holdsUnsavedCredentials)
    }
}
