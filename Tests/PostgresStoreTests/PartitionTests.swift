import AuthCore
import AuthGateTesting
import Foundation
import TestSupport
import Testing

@testable import PostgresStore

/// A replica cut off from the database by a silent partition (a relay that stops passing
/// anything, both ways, and closes nothing; the connections open during the cut stay dead
/// after it) catches up once the database answers again: a logout or a login made on
/// another replica during the cut, and a refresh its own backoff held back.
///
/// The catch-up must come within ``healBound`` of the heal (issue 31's bound: the replica
/// follows within a second of the database answering again; about 50 ms is typical here);
/// the time is printed. `scripts/scale-out-partition` checks the same on real network
/// namespaces.
@Suite(TestDatabase.required, .serialized) struct PartitionTests {
    /// How long after the heal the replica may take to follow.
    static let healBound = Duration.seconds(1)

    /// Two replicas, the first behind a relay; both logged in and following.
    struct CutReplicas {
        let relay: PostgresRelay
        let replicas: Replicas

        init(loggedIn: Bool) async throws {
            relay = try PostgresRelay(toPort: try TestDatabase.app().port)
            replicas = try await Replicas(2, terms: .init(term: .seconds(5)), ports: [0: relay.port])
            if loggedIn {
                _ = try await replicas.loginEverywhere()
            } else {
                for a in replicas.actors { try await a.restore() }
            }
            replicas.follow()
        }

        /// Cuts the first replica off until its store noticed (its listening connection's
        /// ping and its reachability ping unanswered).
        func cut() async {
            relay.partition()
            let noticed = await eventually(timeout: .seconds(30)) { !replicas.stores[0].isReachable }
            #expect(noticed, "the cut-off replica never noticed")
            try? await Task.sleep(for: ListenerLink.pingInterval + ListenerLink.pingTimeout)
        }

        /// Heals the cut and waits for `condition`; prints how long it took, and records an
        /// issue past ``PartitionTests/healBound``. False when it never came (30 s).
        func heal(until what: String, _ condition: () async -> Bool) async -> Bool {
            let clock = ContinuousClock()
            relay.heal()
            let healed = clock.now
            let done = await eventually(timeout: .seconds(30), condition)
            let took = clock.now - healed
            print("partition heal: \(what) \(took) after the heal")
            #expect(!done || took <= PartitionTests.healBound, "\(what) \(took) after the heal")
            return done
        }

        func close() async {
            await replicas.close()
            relay.close()
        }
    }

    @Test func aLogoutMadeElsewhereDuringTheCutEndsTheSessionOnceItHeals() async throws {
        let r = try await CutReplicas(loggedIn: true)
        await r.cut()
        try await r.replicas.actors[1].logout()
        #expect(await r.replicas.actors[0].status.isLoggedIn, "the cut-off replica cannot know yet")
        let ended = await r.heal(until: "logout followed") { await !r.replicas.actors[0].status.isLoggedIn }
        #expect(ended)
        #expect(await r.replicas.actors[0].status.logoutReason == .endedElsewhere)
        await r.close()
    }

    @Test func aLoginMadeElsewhereDuringTheCutIsAdoptedOnceItHeals() async throws {
        let r = try await CutReplicas(loggedIn: false)
        await r.cut()
        let token = try await r.replicas.actors[1].login(.password(username: "alice", password: "wonderland"))
        let adopted = await r.heal(until: "login adopted") {
            (try? await r.replicas.actors[0].token().value) == token.value
        }
        #expect(adopted)
        await r.close()
    }

    /// One failed refresh during the cut, or ten (a cut longer than the backoff's maximum,
    /// 300 s: the actors' clock is moved past each backoff in turn, so the last is the longest).
    @Test(arguments: [1, 10])
    func aRefreshHeldBackByTheCutRunsOnceItHealsWithoutWaitingOutItsBackoff(failures: Int) async throws {
        let r = try await CutReplicas(loggedIn: true)
        await r.cut()
        // The token expires during the cut: the refresh cannot take the lease, and backs off.
        for _ in 0..<failures {
            r.replicas.clock.advance(by: .seconds(3600))
            await #expect(throws: AuthError.self) { _ = try await r.replicas.actors[0].token() }
        }
        // The backoff is on the actors' test clock, which does not move from here on: only
        // the catch-up after the heal can let the refresh run.
        let refreshed = await r.heal(until: "refresh ran") { (try? await r.replicas.actors[0].token()) != nil }
        #expect(refreshed)
        #expect(await r.replicas.server.statistics.refreshes == 1)
        await r.close()
    }
}
