import AuthCore
import AuthGateTesting
import Foundation
import Logging
import Testing

@testable import PostgresStore

/// Two replicas (two ``AuthActor``s, each with its own connection pool) over one table share
/// one session: what one logs in, the other restores; what one logs out, the other no
/// longer finds.
@Suite(TestDatabase.required) struct SharedSessionTests {
    let key = TokenStoreKey.random()

    func replica(table: String, server: FakeAuthorizationServer, clock: TestClock) async throws -> (AuthActor, PostgresTokenStore)
    {
        let app = try TestDatabase.app()
        let store = try await PostgresTokenStore.open(
            try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: table), password: app.password,
            key: key, logger: Logger(label: "test.store"))
        let actor = AuthActor(
            client: OAuth2Client(
                configuration: .init(
                    tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "s3cret"),
                transport: server, clock: clock),
            tokenStore: store, stateStore: store, clock: clock, configuration: .init(skew: .seconds(30), jitter: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), refreshCoordinator: store)
        return (actor, store)
    }

    @Test func aLoginOnOneReplicaIsRestoredByAnotherAndALogoutEndsItForBoth() async throws {
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await replica(table: table, server: server, clock: clock)
        let (b, storeB) = try await replica(table: table, server: server, clock: clock)
        try await a.restore()
        let token = try await a.login(.password(username: "alice", password: "wonderland"))
        let status = try await b.restore()
        #expect(status.isLoggedIn)
        #expect(status.subject == "alice")
        #expect(try await b.token().value == token.value)
        #expect(try await b.token().generation == token.generation)
        try await a.logout()
        let (c, storeC) = try await replica(table: table, server: server, clock: clock)
        #expect(try await c.restore().isLoggedIn == false)
        for s in [storeA, storeB, storeC] { await s.close() }
    }
}
