import AuthCore
import AuthGateTesting
import Foundation
import Logging
import Testing

@testable import PostgresStore

/// N replicas in one process: each an ``AuthActor`` over its own ``PostgresTokenStore`` (its
/// own connection pool, listening connection and replica name) on one table, all clients of
/// one fake authorization server with rotation and reuse detection.
struct Replicas {
    let clock = TestClock()
    let server: FakeAuthorizationServer
    let table = TestDatabase.uniqueTable()
    let key = TokenStoreKey.random()
    let terms: LeaseRule.Terms
    var actors: [AuthActor] = []
    var stores: [PostgresTokenStore] = []

    /// - Parameter ports: the port through which replica `i` reaches the database (a
    ///   ``PostgresRelay``), when not the database's own.
    init(
        _ count: Int, server configuration: FakeAuthorizationServer.Configuration = .init(), terms: LeaseRule.Terms,
        ports: [Int: Int] = [:]
    ) async throws {
        self.server = FakeAuthorizationServer(configuration: configuration, clock: clock)
        self.terms = terms
        for i in 0..<count {
            let store = try await openStore(name: "replica-\(i)", port: ports[i])
            stores.append(store)
            actors.append(
                AuthActor(
                    client: OAuth2Client(
                        configuration: .init(
                            tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "s3cret"),
                        transport: server, clock: clock),
                    tokenStore: store, stateStore: store, clock: clock, configuration: .init(skew: .seconds(30), jitter: .zero),
                    logger: Logger(label: "replica-\(i)", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0 },
                    refreshCoordinator: store))
        }
    }

    /// Another store on the same table (a replica without an actor, to hold leases by hand).
    func openStore(name: String, port: Int? = nil) async throws -> PostgresTokenStore {
        let app = try TestDatabase.app()
        var url = app
        if let port { url.port = port }
        return try await PostgresTokenStore.openRunning(
            try PostgresStoreConfiguration(url: url.storeURL, tlsMode: "disable", table: table), password: app.password, key: key,
            logger: Logger(label: name, factory: { _ in SwiftLogNoOpLogHandler() }), replicaID: name, leaseTerms: terms)
    }

    /// The first replica logs in; every other restores the session from the table.
    func loginEverywhere() async throws -> AccessToken {
        for a in actors { try await a.restore() }
        let token = try await actors[0].login(.password(username: "alice", password: "wonderland"))
        for a in actors.dropFirst() {
            let status = try await a.restore()
            #expect(status.isLoggedIn)
        }
        return token
    }

    /// `perReplica` concurrent `token()` calls on every replica; the access tokens they got.
    func storm(perReplica: Int) async throws -> [String] {
        try await tokenStorm(actors, perReplica: perReplica)
    }

    /// Every replica follows the others' notifications (as a gateway does), until its
    /// store stops.
    func follow() {
        for (store, actor) in zip(stores, actors) { store.follow([.default: actor]) }
    }

    func close() async {
        for s in stores { await s.close() }
    }
}

/// `perReplica` concurrent `token()` calls on each of `actors` (replicas of one session); the
/// access tokens they got.
func tokenStorm(_ actors: [AuthActor], perReplica: Int) async throws -> [String] {
    try await withThrowingTaskGroup(of: String.self) { group in
        for a in actors {
            for _ in 0..<perReplica { group.addTask { try await a.token().value } }
        }
        return try await group.reduce(into: []) { $0.append($1) }
    }
}
