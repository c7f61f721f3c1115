import AuthCore
import AuthGateTesting
import Foundation
import TestSupport
import Testing

@testable import PostgresStore

/// The single flight across replicas, against the real database: one refresh per expiry
/// whatever the number of replicas and callers, no reuse detection at a server that
/// rotates and detects reuse, the lease renewed through a slow refresh, and a dead holder's
/// lease taken over once it lapses.
@Suite(TestDatabase.required) struct CrossReplicaRefreshTests {
    @Test func aStormAcrossThreeReplicasRefreshesOncePerExpiry() async throws {
        let r = try await Replicas(3, terms: .init(term: .seconds(5)))
        _ = try await r.loginEverywhere()
        for expiry in 1...3 {
            r.clock.advance(by: .seconds(3600))
            let before = await r.server.statistics
            let tokens = try await r.storm(perReplica: 40)
            let after = await r.server.statistics
            #expect(after.refreshes - before.refreshes == 1, "expiry \(expiry): \(after.refreshes - before.refreshes) refreshes")
            #expect(Set(tokens).count == 1, "expiry \(expiry): every replica serves the one new token")
            #expect(await r.server.isValid(accessToken: tokens[0]))
        }
        #expect(await r.server.statistics.reuseDetections == 0)
        await r.close()
    }

    @Test func aRefreshSlowerThanTheLeaseTermIsStillTheOnlyOne() async throws {
        let r = try await Replicas(3, terms: .init(term: .seconds(1)))
        _ = try await r.loginEverywhere()
        r.clock.advance(by: .seconds(3600))
        await r.server.holdRefreshes()
        let storm = Task { try await r.storm(perReplica: 10) }
        #expect(await eventually { await r.server.heldRefreshCount == 1 })
        // Three terms: without renewal the lease would have lapsed and another replica
        // would have sent the same refresh token (a reuse).
        try await Task.sleep(for: .seconds(3))
        #expect(await r.server.heldRefreshCount == 1)
        await r.server.releaseRefreshes()
        let tokens = try await storm.value
        #expect(Set(tokens).count == 1)
        #expect(await r.server.statistics.refreshes == 1)
        #expect(await r.server.statistics.reuseDetections == 0)
        await r.close()
    }

    @Test func aLeaseWhoseHolderDiedIsTakenOverOnceItLapses() async throws {
        let r = try await Replicas(2, terms: .init(term: .seconds(1)))
        let first = try await r.loginEverywhere()
        // A third replica takes the lease and dies before sending anything.
        let doomed = try await r.openStore(name: "doomed")
        let claim = try await doomed.acquire(for: .default, replacing: first.value)
        guard case .granted = claim else {
            Issue.record("the lease was not granted: \(claim)")
            return
        }
        await doomed.close()
        r.clock.advance(by: .seconds(3600))
        let waiting = Task { try await r.actors[1].token() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(await r.server.statistics.refreshAttempts == 0, "refreshed while another replica's lease was live")
        let token = try await waiting.value
        #expect(token.value != first.value)
        #expect(await r.server.statistics.refreshes == 1)
        #expect(try await r.actors[0].token().value == token.value, "the other replica adopts it")
        #expect(await r.server.statistics.refreshes == 1)
        await r.close()
    }

    @Test func theLeaseHolderIsNamedWhileItHoldsTheLeaseAndNoneAfter() async throws {
        // A long term, so the remaining one stays well above the floor checked below
        // however slowly a loaded machine runs the queries in between.
        let r = try await Replicas(2, terms: .init(term: .seconds(600)))
        let first = try await r.loginEverywhere()
        #expect(try await r.stores[1].leaseHolder(for: .default) == nil, "no refresh in flight")
        let claim = try await r.stores[0].acquire(for: .default, replacing: first.value)
        guard case .granted(let lease) = claim else {
            Issue.record("the lease was not granted: \(claim)")
            return
        }
        let holder = try #require(try await r.stores[1].leaseHolder(for: .default), "another replica sees the holder")
        #expect(holder.owner == "replica-0")
        #expect(holder.remaining > .seconds(300) && holder.remaining <= .seconds(600))
        #expect(try await r.stores[0].leaseHolder(for: AccountID("nobody")) == nil)
        await r.stores[0].release(lease, for: .default)
        #expect(try await r.stores[1].leaseHolder(for: .default) == nil, "released")
        await r.close()
    }

    @Test func aLateResultCannotRevivealogoutOrOverwriteANewerPair() async throws {
        let r = try await Replicas(1, terms: .init(term: .seconds(5)))
        let first = try await r.loginEverywhere()
        let store = r.stores[0]
        let claim = try await store.acquire(for: .default, replacing: first.value)
        guard case .granted(let lease) = claim else {
            Issue.record("no lease")
            return
        }
        // A logout lands while the lease holder's request is out.
        try await r.actors[0].logout()
        let late = TokenRecord(
            accessToken: "late-access", refreshToken: "late-refresh", expiresAt: nil, issuedAt: Date(),
            generation: TokenGeneration(9))
        #expect(try await store.commit(late, for: .default, lease: lease) == .superseded(nil))
        #expect(try await store.load(for: .default) as TokenRecord? == nil)
        // A login, then a late result fenced on the session before it.
        let second = try await r.actors[0].login(.password(username: "alice", password: "wonderland"))
        let outcome = try await store.commit(late, for: .default, lease: lease)
        guard case .superseded(let stored?) = outcome else {
            Issue.record("late result committed: \(outcome)")
            return
        }
        #expect(stored.accessToken == second.value)
        await r.close()
    }
}
