import AuthCore
import AuthGateTesting
import Foundation
import Locking
import Logging
import PostgresNIO
import TestSupport
import Testing

@testable import PostgresStore

/// `NOTIFY` needs no privilege: any role that may connect to the database can send on the
/// store's channel. What such a stranger sends neither grows a replica's memory nor changes a
/// session: a notification only makes a replica read its row again.
@Suite(TestDatabase.required) struct ForgedNotificationTests {
    /// A role that may log in and nothing else: no right on any table of the store.
    static func stranger() async throws -> TestDatabase.Parts {
        let app = try TestDatabase.app()
        let role = "stranger_" + TestDatabase.uniqueTable()
        let password = UUID().uuidString
        try await TestDatabase.adminExecute("CREATE ROLE \(role) LOGIN PASSWORD '\(password)'")
        return try TestDatabase.Parts("postgres://\(role):\(password)@\(app.host):\(app.port)/\(app.database)")
    }

    /// Sends each payload on `channel` as `parts`, in order.
    static func notify(_ payloads: [String], on channel: String, as parts: TestDatabase.Parts) async throws {
        try await TestDatabase.withConnection(parts) { c in
            for payload in payloads {
                try await c.query("SELECT pg_notify(\(channel), \(payload))", logger: Logger(label: "test.stranger"))
            }
        }
    }

    @Test func aStrangerNotifyingForManyAccountsGrowsNoReplicaAndChangesNoSession() async throws {
        let r = try await Replicas(2, terms: .init(term: .seconds(5)))
        let token = try await r.loginEverywhere()
        r.follow()
        let events = Locked<[AuthEvent]>([])
        let watching = r.actors.map { actor in
            let stream = actor.events.subscribe()
            return Task { for await e in stream { events.withLock { $0.append(e.event) } } }
        }
        try await Task.sleep(for: .milliseconds(200))
        events.withLock { $0.removeAll() }  // each subscriber's first event is the current state
        let rowsBefore = try await TestDatabase.rawRows(r.table)
        let stranger = try await Self.stranger()
        let channel = r.table + "_events"
        let seen = r.stores.map { $0.hub.version(of: AccountID.default.rawValue) }

        // Five thousand accounts this replica does not serve, in one transaction…
        try await TestDatabase.withConnection(stranger) { c in
            _ = try await c.query(
                "SELECT pg_notify(\(channel), 'logout stranger-' || i || ' ' || i) FROM generate_series(1, 5000) AS i",
                logger: Logger(label: "test.stranger"))
        }
        // …then every kind of change about the account it serves, each claiming a newer generation.
        let forged = [
            "logout default 900", "login default 901", "refreshed default 902", "released default 903", "state default",
        ]
        try await Self.notify(forged, on: channel, as: stranger)

        // Notifications arrive in order: once the forged ones about `default` have reached a
        // replica, so have the five thousand before them.
        for (i, store) in r.stores.enumerated() {
            let heard = await eventually(timeout: .seconds(30)) {
                store.hub.version(of: AccountID.default.rawValue) >= seen[i] + UInt64(forged.count)
            }
            #expect(heard, "replica \(i) never heard the forged notifications")
            #expect(store.hub.trackedAccounts <= 1, "replica \(i) tracks \(store.hub.trackedAccounts) accounts")
        }
        // Whatever the followers made of them (a read of the row each) is done by now.
        try await Task.sleep(for: .milliseconds(500))
        for (i, actor) in r.actors.enumerated() {
            let status = await actor.status
            #expect(status.isLoggedIn, "replica \(i) was logged out by a forged notification")
            #expect(try await actor.token().value == token.value, "replica \(i) serves another token")
        }
        #expect(try await TestDatabase.rawRows(r.table) == rowsBefore)
        #expect(await r.server.statistics.refreshes == 0)
        #expect(events.withLock { $0 }.isEmpty, "events after forged notifications: \(events.withLock { $0 })")
        for t in watching { t.cancel() }
        await r.close()
    }

    @Test func forgedNotificationsWakeAWaiterButNeverLetItRefreshBesideTheLeaseHolder() async throws {
        let r = try await Replicas(2, terms: .init(term: .seconds(5)))
        _ = try await r.loginEverywhere()
        r.follow()
        r.clock.advance(by: .seconds(3600))
        await r.server.holdRefreshes()
        let storm = Task { try await r.storm(perReplica: 5) }
        #expect(await eventually { await r.server.heldRefreshCount == 1 })
        let stranger = try await Self.stranger()
        let rounds = (1...50).flatMap { n in
            ["released default \(n)", "refreshed default \(n)", "logout default \(n)", "login default \(n)"]
        }
        try await Self.notify(rounds, on: r.table + "_events", as: stranger)
        try await Task.sleep(for: .seconds(1))
        #expect(await r.server.heldRefreshCount == 1, "a waiter refreshed beside the holder")
        await r.server.releaseRefreshes()
        let tokens = try await storm.value
        #expect(Set(tokens).count == 1)
        #expect(await r.server.statistics.refreshes == 1)
        #expect(await r.server.statistics.reuseDetections == 0)
        for a in r.actors { #expect(await a.status.isLoggedIn) }
        await r.close()
    }
}
