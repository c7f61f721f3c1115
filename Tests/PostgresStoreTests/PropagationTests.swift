import AuthCore
import AuthGateTesting
import Foundation
import Locking
import TestSupport
import Testing

@testable import PostgresStore

/// LISTEN/NOTIFY propagation: a logout, a login, a refresh or a guest switch on one replica
/// reaches every other replica's ``AuthActor`` and its event subscribers, one `logged_out`
/// per epoch, and a replica whose listening connection was cut catches up.
@Suite(TestDatabase.required, .serialized) struct PropagationTests {
    /// Collects a replica's events.
    final class Events: Sendable {
        let records = Locked<[AuthEvent]>([])
        let task: Task<Void, Never>
        init(_ actor: AuthActor) {
            let stream = actor.events.subscribe()
            let records = self.records
            task = Task { for await r in stream { records.withLock { $0.append(r.event) } } }
        }
        var loggedOutCount: Int {
            records.withLock { $0.filter { if case .loggedOut = $0 { true } else { false } }.count }
        }
    }

    @Test func aLogoutReachesEveryReplicaOnceAndALoginFollows() async throws {
        let r = try await Replicas(3, terms: .init(term: .seconds(5)))
        _ = try await r.loginEverywhere()
        r.follow()
        let events = r.actors.map(Events.init)
        var latencies: [Duration] = []
        let clock = ContinuousClock()
        for round in 1...10 {
            let started = clock.now
            try await r.actors[0].logout()
            for a in r.actors.dropFirst() {
                #expect(await eventually { await !a.status.isLoggedIn }, "round \(round): still logged in")
            }
            latencies.append(clock.now - started)
            for a in r.actors {
                let answer = await #expect(throws: AuthError.self) { _ = try await a.token() }
                #expect(answer?.code == .sessionEnded, "round \(round): every replica says the session ended")
            }
            #expect(await r.actors[0].status.logoutReason == .userInitiated)
            #expect(await r.actors[1].status.logoutReason == .endedElsewhere)
            let token = try await r.actors[0].login(.password(username: "alice", password: "wonderland"))
            for a in r.actors.dropFirst() {
                #expect(await eventually { (try? await a.token().value) == token.value }, "round \(round): login not followed")
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        for (i, e) in events.enumerated() {
            #expect(e.loggedOutCount == 10, "replica \(i): \(e.loggedOutCount) logged_out events for 10 logouts")
        }
        let sorted = latencies.sorted()
        print("logout propagation over \(sorted.count) rounds: p50 \(sorted[sorted.count / 2]), max \(sorted.last!)")
        await r.close()
    }

    @Test func aRefreshAndAGuestSwitchOnOneReplicaAreAdoptedByTheOthers() async throws {
        let r = try await Replicas(2, terms: .init(term: .seconds(5)))
        let first = try await r.loginEverywhere()
        r.follow()
        r.clock.advance(by: .seconds(3600))
        let refreshed = try await r.actors[0].token()
        #expect(refreshed.value != first.value)
        #expect(await eventually { (try? await r.actors[1].token().value) == refreshed.value })
        #expect(await r.server.statistics.refreshes == 1, "the other replica adopted it, refreshed nothing")
        try await r.actors[0].logout()
        #expect(await eventually { await !r.actors[1].status.isLoggedIn })
        try await r.actors[0].setGuestMode(true)
        #expect(await eventually { await r.actors[1].status.isGuest })
        await r.close()
    }

    @Test func aReplicaWhoseListeningConnectionWasCutCatchesUp() async throws {
        let r = try await Replicas(2, terms: .init(term: .seconds(5)))
        _ = try await r.loginEverywhere()
        r.follow()
        // Cut every listening connection, and log out while they reconnect.
        try await TestDatabase.adminExecute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()")
        try await r.actors[0].logout()
        #expect(await eventually { await !r.actors[1].status.isLoggedIn })
        await r.close()
    }
}
