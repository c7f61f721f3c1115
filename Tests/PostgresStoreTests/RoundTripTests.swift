import AuthCore
import AuthGateTesting
import Foundation
import Logging
import Testing

@testable import PostgresStore

/// What a refresh costs in database round trips, counted on the wire (a relay in front of
/// the test PostgreSQL reads the statements the store sends): with the database 300 ms away
/// each is 300 ms of stall at expiry, so the figure may not grow unnoticed.
@Suite(TestDatabase.required) struct RoundTripTests {
    let key = TokenStoreKey.random()
    let account = AccountID.default

    /// A store on a table of its own that reaches the database through `relay`.
    func store(through relay: PostgresRelay) async throws -> PostgresTokenStore {
        let app = try TestDatabase.app()
        var parts = app
        parts.port = relay.port
        return try await PostgresTokenStore.openRunning(
            try PostgresStoreConfiguration(url: parts.storeURL, tlsMode: "disable", table: TestDatabase.uniqueTable()),
            password: app.password, key: key, logger: Logger(label: "test.store", factory: { _ in SwiftLogNoOpLogHandler() }),
            // A renewal (every third of the term) is off the refresh's path: none within the test.
            leaseTerms: .init(term: .seconds(120)))
    }

    @Test func aRefreshTakesTheLeaseAndCommitsInTwoRoundTrips() async throws {
        let relay = try PostgresRelay(toPort: try TestDatabase.app().port)
        defer { relay.close() }
        let store = try await store(through: relay)
        let first = LateWriteTests.record(access: "access-1", refresh: "refresh-1")
        try await store.save(first, for: account)

        let before = relay.statements.count
        guard case .granted(let lease) = try await store.acquire(for: account, replacing: first.accessToken) else {
            Issue.record("no lease")
            return
        }
        let outcome = try await store.commit(
            LateWriteTests.record(access: "access-2", refresh: "refresh-2"), for: account, lease: lease)
        let refresh = Array(relay.statements[before...])
        #expect(outcome == .committed)
        // The row was written here at a generation this store remembers: no read before the take.
        #expect(refresh.count <= 2, "\(refresh.count) round trips: \(refresh)")
        print("round trips per refresh (take the lease, commit): \(refresh.count)")

        // A login and a logout: BEGIN, the statement (which notifies), COMMIT.
        let beforeLogout = relay.statements.count
        try await store.delete(for: account)
        let logout = Array(relay.statements[beforeLogout...])
        #expect(logout.count <= 3, "\(logout.count) round trips: \(logout)")
        print("round trips per logout: \(logout.count)")
        await store.close()
    }

    /// A pair this store saw was replaced meanwhile by another replica's refresh: the take at
    /// the generation it remembers changes nothing, the row is read, and the caller adopts
    /// the newer pair (never refreshes the older one: its refresh token was rotated away).
    @Test func aPairReplacedElsewhereIsReadAfterTheTakeAtItsOldGenerationFails() async throws {
        let relay = try PostgresRelay(toPort: try TestDatabase.app().port)
        defer { relay.close() }
        let here = try await store(through: relay)
        let first = LateWriteTests.record(access: "access-1", refresh: "refresh-1")
        try await here.save(first, for: account)
        let elsewhere = try await PostgresTokenStore.openRunning(
            here.configuration, password: try TestDatabase.app().password, key: key,
            logger: Logger(label: "test.other", factory: { _ in SwiftLogNoOpLogHandler() }), replicaID: "elsewhere",
            leaseTerms: .init(term: .seconds(120)))
        guard case .granted(let lease) = try await elsewhere.acquire(for: account, replacing: first.accessToken) else {
            Issue.record("no lease elsewhere")
            return
        }
        let second = LateWriteTests.record(access: "access-2", refresh: "refresh-2")
        #expect(try await elsewhere.commit(second, for: account, lease: lease) == .committed)

        let before = relay.statements.count
        let claim = try await here.acquire(for: account, replacing: first.accessToken)
        #expect(claim == .superseded(second))
        let sent = Array(relay.statements[before...])
        #expect(sent.count == 2, "the take, then the read: \(sent)")
        // And the newer pair, read here, is refreshed with the take alone.
        guard case .granted = try await here.acquire(for: account, replacing: second.accessToken) else {
            Issue.record("no lease on the newer pair")
            return
        }
        await elsewhere.close()
        await here.close()
    }

    /// Following another replica's change (a notification, or a restore) reads the session's
    /// state and tokens back in one statement: the wait of the requests on the other replicas
    /// at expiry, and a logout's propagation, each lose a round trip.
    @Test func aReplicaReadsTheSessionBackInOneRoundTrip() async throws {
        let relay = try PostgresRelay(toPort: try TestDatabase.app().port)
        defer { relay.close() }
        let store = try await store(through: relay)
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let actor = AuthActor(
            client: OAuth2Client(
                configuration: .init(
                    tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "s3cret"),
                transport: server, clock: clock),
            tokenStore: store, stateStore: store, clock: clock, configuration: .init(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), refreshCoordinator: store)
        try await actor.restore()
        try await actor.login(.password(username: "alice", password: "wonderland"))
        let before = relay.statements.count
        try await actor.synchronize()
        let read = Array(relay.statements[before...])
        #expect(read.count == 1, "\(read.count) round trips: \(read)")
        print("round trips to read the session back (synchronize): \(read.count)")
        await store.close()
    }
}
