import AuthCore
import AuthGateTesting
import Foundation
import Locking
import Logging
import TestSupport
import Testing

/// A coordinator over a shared in-memory "table" that behaves like the PostgreSQL one: the
/// lease is granted only on the pair the caller names, commits are compare-and-set on a
/// fence that every write bumps, and "another replica" writes the table directly.
final class SharedTableCoordinator: RefreshCoordinator {
    struct Table {
        var record: TokenRecord?
        var fence: UInt64 = 1
        var unavailable = false
        var acquires = 0
        var commits = 0
        var releases = 0
    }
    let table = Locked(Table())

    /// Another replica stores `record` (a refresh or login of its own), or logs out (`nil`).
    func otherReplicaWrites(_ record: TokenRecord?) {
        table.withLock {
            $0.record = record
            $0.fence += 1
        }
    }

    func acquire(for account: AccountID, replacing accessToken: String) async throws -> RefreshClaim {
        try table.withLock { t in
            t.acquires += 1
            if t.unavailable { throw AuthError.store(.unavailable, .tokens, account: account, message: "down") }
            guard let record = t.record, record.accessToken == accessToken else { return .superseded(t.record) }
            return .granted(RefreshLease(owner: "me", fence: t.fence))
        }
    }

    func commit(_ record: TokenRecord, for account: AccountID, lease: RefreshLease) async throws -> RefreshCommit {
        try table.withLock { t in
            if t.unavailable { throw AuthError.store(.unavailable, .tokens, account: account, message: "down") }
            guard t.fence == lease.fence, t.record != nil else { return .superseded(t.record) }
            t.record = record
            t.fence += 1
            t.commits += 1
            return .committed
        }
    }

    func release(_ lease: RefreshLease, for account: AccountID) async {
        table.withLock { $0.releases += 1 }
    }
}

/// ``AuthActor`` around a ``RefreshCoordinator``: it refreshes only with the lease, adopts
/// what another replica stored instead of refreshing a spent pair, never lets a result
/// that lost its fence overwrite or revive anything, and keeps its tokens when the lease
/// cannot be had.
struct RefreshCoordinatorTests {
    struct Replica {
        let h: Harness
        let coordinator = SharedTableCoordinator()
        let actor: AuthActor

        init(server: FakeAuthorizationServer.Configuration = .init()) {
            h = Harness(server: server)
            actor = AuthActor(
                client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
                configuration: h.configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                randomFraction: { 0 }, refreshCoordinator: coordinator)
        }

        /// Logs in and puts the pair in the shared table, as a login on any replica does.
        func login() async throws -> AccessToken {
            let token = try await actor.login(.password(username: "alice", password: "wonderland"))
            coordinator.otherReplicaWrites(h.tokenStore.record(for: .default))
            return token
        }

        /// A pair "another replica" got from the same server.
        func otherReplicasPair() async throws -> TokenRecord {
            let response = try await h.client.requestToken(.password(username: "alice", password: "wonderland"))
            return TokenRecord(
                accessToken: response.accessToken, refreshToken: response.refreshToken,
                expiresAt: h.clock.wallNow.addingTimeInterval(3600), issuedAt: h.clock.wallNow, generation: TokenGeneration(99))
        }
    }

    @Test func aRefreshTakesTheLeaseAndCommitsThroughIt() async throws {
        let r = Replica()
        let first = try await r.login()
        r.h.clock.advance(by: .seconds(3590))
        let second = try await r.actor.token()
        #expect(second.value != first.value)
        #expect(await r.h.server.statistics.refreshes == 1)
        let t = r.coordinator.table.withLock { $0 }
        #expect(t.acquires == 1 && t.commits == 1)
        #expect(t.record?.accessToken == second.value)
    }

    @Test func aPairAnotherReplicaCommittedIsAdoptedWithoutAnyTokenRequest() async throws {
        let r = Replica()
        let first = try await r.login()
        let theirs = try await r.otherReplicasPair()
        r.coordinator.otherReplicaWrites(theirs)
        let requestsBefore = await r.h.server.statistics.requests
        let adopted = try await r.actor.refresh(after: first.generation)
        #expect(adopted.value == theirs.accessToken)
        #expect(adopted.generation > first.generation)
        #expect(await r.h.server.statistics.requests == requestsBefore, "no refresh was sent")
        #expect(await r.h.server.statistics.reuseDetections == 0)
    }

    @Test func aSessionLoggedOutElsewhereEndsHereWithoutWritingTheSharedStore() async throws {
        let r = Replica()
        let first = try await r.login()
        r.coordinator.otherReplicaWrites(nil)
        let deletesBefore = r.h.tokenStore.deleteCount
        await #expect(throws: AuthError.self) { _ = try await r.actor.refresh(after: first.generation) }
        #expect(await r.actor.status.isLoggedIn == false)
        #expect(r.h.tokenStore.deleteCount == deletesBefore, "the replica that logged out wrote the store")
        #expect(await r.h.server.statistics.refreshes == 0)
    }

    @Test func aResultThatLostItsFenceNeverOverwritesTheNewerPair() async throws {
        let r = Replica()
        let first = try await r.login()
        await r.h.server.holdRefreshes()
        let waiting = Task { try await r.actor.refresh(after: first.generation) }
        #expect(await eventually { await r.h.server.heldRefreshCount == 1 })
        // While our request is at the server, another replica commits its own pair.
        let theirs = try await r.otherReplicasPair()
        r.coordinator.otherReplicaWrites(theirs)
        await r.h.server.releaseRefreshes()
        let token = try await waiting.value
        #expect(token.value == theirs.accessToken, "the stored pair is served, not our late one")
        #expect(r.coordinator.table.withLock { $0.record?.accessToken } == theirs.accessToken)
        #expect(r.coordinator.table.withLock { $0.commits } == 0)
    }

    @Test func aLateResultNeverRevivesASessionLoggedOutElsewhere() async throws {
        let r = Replica()
        let first = try await r.login()
        await r.h.server.holdRefreshes()
        let waiting = Task { try await r.actor.refresh(after: first.generation) }
        #expect(await eventually { await r.h.server.heldRefreshCount == 1 })
        r.coordinator.otherReplicaWrites(nil)
        await r.h.server.releaseRefreshes()
        await #expect(throws: AuthError.self) { _ = try await waiting.value }
        #expect(r.coordinator.table.withLock { $0.record } == nil)
        #expect(await r.actor.status.isLoggedIn == false)
    }

    @Test func withoutTheLeaseTheTokensAreKeptAndTheCallerToldToRetry() async throws {
        let r = Replica()
        let first = try await r.login()
        r.coordinator.table.withLock { $0.unavailable = true }
        do {
            _ = try await r.actor.refresh(after: first.generation)
            Issue.record("refreshed without the lease")
        } catch let error as AuthError {
            #expect(error.code == .refreshFailed)
            #expect(error.retryAfter != nil)
        }
        #expect(await r.h.server.statistics.refreshes == 0)
        #expect(await r.actor.status.isLoggedIn)
        // The database returns: the next refresh goes through.
        r.coordinator.table.withLock { $0.unavailable = false }
        r.h.clock.advance(by: .seconds(60))
        let again = try await r.actor.refresh(after: first.generation)
        #expect(again.generation > first.generation)
    }

    @Test func aRestoreLeavesTokensAloneThatAnotherReplicasLoginIsStillWriting() async throws {
        let r = Replica()
        // Another replica has written its login's tokens, not yet its state.
        r.h.tokenStore.setRecord(try await r.otherReplicasPair(), for: .default)
        let deletes = r.h.tokenStore.deleteCount
        #expect(try await r.actor.restore().isLoggedIn == false)
        #expect(r.h.tokenStore.deleteCount == deletes)
        #expect(r.h.tokenStore.record(for: .default) != nil)
        // The same with the store a process has to itself: a crash's leftovers, deleted.
        let alone = Harness()
        alone.tokenStore.setRecord(try await r.otherReplicasPair(), for: .default)
        _ = try await alone.actor.restore()
        #expect(alone.tokenStore.record(for: .default) == nil)
    }
}
