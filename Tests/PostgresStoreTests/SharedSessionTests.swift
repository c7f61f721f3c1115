import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Logging
import Testing

@testable import PostgresStore

/// Two replicas (two ``AuthActor``s, each with its own connection pool) over one table share
/// one session: what one logs in, the other restores; what one logs out, the other no
/// longer finds.
@Suite(TestDatabase.required) struct SharedSessionTests {
    let key = TokenStoreKey.random()

    func replica(
        table: String, server: FakeAuthorizationServer, clock: TestClock, dpop: DPoPKeySource? = nil,
        client: OAuth2Client.Configuration? = nil, certificate: (@Sendable () -> CertificateBinding?)? = nil
    ) async throws -> (AuthActor, PostgresTokenStore) {
        let app = try TestDatabase.app()
        let store = try await PostgresTokenStore.openRunning(
            try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: table), password: app.password,
            key: key, logger: Logger(label: "test.store"))
        let actor = AuthActor(
            client: OAuth2Client(
                configuration: client
                    ?? .init(tokenEndpoint: Self.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret"),
                transport: server, clock: clock),
            tokenStore: store, stateStore: store, clock: clock,
            configuration: .init(skew: .seconds(30), jitter: .zero, dpop: dpop, shownCertificate: certificate),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), refreshCoordinator: store)
        return (actor, store)
    }

    /// A generated DPoP key is kept sealed in the row with the tokens bound to it: another
    /// replica restores it, proves it, and refreshes the bound family with it (the server
    /// refuses a proof of any other key); a logout takes it away with the tokens.
    @Test func aGeneratedDPoPKeyIsSharedSealedByTheReplicasAndEndsWithTheSession() async throws {
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await replica(table: table, server: server, clock: clock, dpop: .generated(.es256))
        let (b, storeB) = try await replica(table: table, server: server, clock: clock, dpop: .generated(.es256))
        try await a.restore()
        let token = try await a.login(.password(username: "alice", password: "wonderland"))
        let key = try #require(token.dpopKey)
        #expect(token.isDPoP)
        #expect(await server.dpopBinding(of: token.value) == key.thumbprint)
        #expect(try await b.restore().dpopThumbprint == key.thumbprint)
        #expect(try await b.token().dpopKey == key)
        let rows = try await TestDatabase.rawRows(table).joined()
        let pemHex = Array("PRIVATE KEY".utf8).map { String(format: "%02x", $0) }.joined()
        #expect(!rows.isEmpty && !rows.contains("PRIVATE KEY") && !rows.contains(pemHex), "the key is sealed with the tokens")
        clock.advance(by: .seconds(3600))
        let refreshed = try await b.token()
        #expect(refreshed.value != token.value && refreshed.dpopKey == key)
        #expect(await server.dpopBinding(of: refreshed.value) == key.thumbprint)
        #expect(await server.statistics.dpopRefusals.isEmpty)
        try await b.logout()
        let (c, storeC) = try await replica(table: table, server: server, clock: clock, dpop: .generated(.es256))
        #expect(try await c.restore().isLoggedIn == false)
        let next = try await c.login(.password(username: "alice", password: "wonderland"))
        #expect(next.dpopKey != nil && next.dpopKey != key, "a new session proves a new key")
        for s in [storeA, storeB, storeC] { await s.close() }
    }

    static let tokenEndpoint = "https://auth.example.test/oauth/token"

    /// Replicas showing different certificates of one subject: the binding kept in the row
    /// moves once, to the newer certificate, instead of each replica re-binding the tokens to
    /// its own after every 401 its API answers; the replica with the older certificate is
    /// refused (the session kept) until it shows the tokens' certificate.
    @Test func theCertificateBindingInTheRowOnlyMovesToANewerCertificate() async throws {
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let table = TestDatabase.uniqueTable()
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let older = CertificateBinding(thumbprint: "b2xkZXI", notBefore: start)
        let newer = CertificateBinding(thumbprint: "bmV3ZXI", notBefore: start + 3600)
        let (a, storeA) = try await replica(table: table, server: server, clock: clock, certificate: { older })
        let (b, storeB) = try await replica(table: table, server: server, clock: clock, certificate: { newer })
        try await a.restore()
        var bound: [String: CertificateBinding?] = [:]
        let first = try await a.login(.password(username: "alice", password: "wonderland"))
        bound[first.value] = try await storeA.load(for: .default)?.certificate
        #expect(bound[first.value] == older)
        try await b.restore()
        // Each replica meets its API's 401 for a token bound to another certificate than its
        // own and asks for a refresh; then the other follows the row, as a notification makes it.
        var refusedOnA = 0
        for _ in 0..<4 {
            for (replica, mine, other) in [(b, newer, a), (a, older, b)] {
                let token = try await replica.token()
                guard (bound[token.value] ?? nil) != mine else { continue }
                do {
                    let next = try await replica.refresh(after: token.generation)
                    bound[next.value] = try await storeA.load(for: .default)?.certificate
                } catch let error as AuthError where error.code == .clientCertificateOutdated {
                    refusedOnA += replica === a ? 1 : 0
                }
                try await other.synchronize()
            }
        }
        let refreshes = await server.statistics.refreshes
        #expect(refreshes == 1, "the binding moved once, to b's newer certificate, not \(refreshes) times")
        #expect(try await storeB.load(for: .default)?.certificate == newer)
        #expect(refusedOnA == 4, "a, whose certificate is older, was refused each time")
        #expect(a.clientCertificateOutdated && !b.clientCertificateOutdated)
        #expect(await a.status.isLoggedIn, "the session is kept")
        #expect(await b.status.isLoggedIn)
        #expect(await server.statistics.reuseDetections == 0)
        for s in [storeA, storeB] { await s.close() }
    }

    /// Replicas that authenticate with `private_key_jwt`, each with a key file of its own
    /// (both registered for the client), share one session: a login on one, a refresh on
    /// the other with its own assertion, and no refused assertion.
    @Test func replicasWithKeysOfTheirOwnShareOneSession() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-pkjwt-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keys = [P256.Signing.PrivateKey(), P256.Signing.PrivateKey()]
        for (i, key) in keys.enumerated() {
            #expect(
                FileManager.default.createFile(
                    atPath: dir + "/key-\(i).pem", contents: Data(key.pemRepresentation.utf8),
                    attributes: [.posixPermissions: 0o600]))
        }
        let clock = TestClock()
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.assertionKeys = ["authgate": keys.map { .p256($0.publicKey) }]
        let server = FakeAuthorizationServer(configuration: configuration, clock: clock)
        let table = TestDatabase.uniqueTable()
        func client(_ i: Int) -> OAuth2Client.Configuration {
            .init(
                tokenEndpoint: Self.tokenEndpoint, clientID: "authgate", authentication: .privateKeyJWT,
                assertion: ClientAssertion(
                    source: .privateKey(path: dir + "/key-\(i).pem", algorithm: nil, keyID: nil), audience: Self.tokenEndpoint))
        }
        let (a, storeA) = try await replica(table: table, server: server, clock: clock, client: client(0))
        let (b, storeB) = try await replica(table: table, server: server, clock: clock, client: client(1))
        try await a.restore()
        let token = try await a.login(.password(username: "alice", password: "wonderland"))
        #expect(try await b.restore().isLoggedIn)
        clock.advance(by: .seconds(3600))
        let refreshed = try await b.token()
        #expect(refreshed.value != token.value)
        let statistics = await server.statistics
        #expect(statistics.clientAssertions == 2, "one assertion per token request, each replica its own")
        #expect(statistics.assertionRefusals.isEmpty && statistics.reuseDetections == 0)
        #expect(try await a.token().value == refreshed.value, "the first replica follows the second's refresh")
        for s in [storeA, storeB] { await s.close() }
    }

    /// A replica given another DPoP key file than the one the shared tokens are bound to
    /// cannot use them: it ends the session for itself only (`key_changed`), and the
    /// replicas that hold the key go on with it.
    @Test func aReplicaWithAnotherKeyFileNeverEndsTheSharedSession() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-dpopfile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["right", "other"] {
            #expect(
                FileManager.default.createFile(
                    atPath: dir + "/\(name).pem", contents: Data(P256.Signing.PrivateKey().pemRepresentation.utf8),
                    attributes: [.posixPermissions: 0o600]))
        }
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let table = TestDatabase.uniqueTable()
        let right = DPoPKeySource.file(DPoPKey(path: dir + "/right.pem"))
        let (a, storeA) = try await replica(table: table, server: server, clock: clock, dpop: right)
        let (b, storeB) = try await replica(
            table: table, server: server, clock: clock, dpop: .file(DPoPKey(path: dir + "/other.pem")))
        try await a.restore()
        let token = try await a.login(.password(username: "alice", password: "wonderland"))
        let restored = try await b.restore()
        #expect(!restored.isLoggedIn && restored.logoutReason == .keyChanged)
        #expect(try await a.token().value == token.value, "the replica with the key keeps serving")
        let (c, storeC) = try await replica(table: table, server: server, clock: clock, dpop: right)
        #expect(try await c.restore().isLoggedIn, "the shared row still holds the session")
        #expect(try await c.token().dpopKey?.thumbprint == token.dpopKey?.thumbprint)
        for s in [storeA, storeB, storeC] { await s.close() }
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
