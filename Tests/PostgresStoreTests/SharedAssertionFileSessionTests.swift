import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import TestSupport
import Testing

@testable import PostgresStore

/// Replicas whose client authenticates with an assertion someone else made
/// (`private_key_jwt` from `clientAssertionFile`: a projected service-account token, a
/// JWT-SVID), each replica reading its own file, share one `client_credentials` session
/// through the table: one renewal per expiry across the replicas, a file rotated on one
/// replica used by its next renewal without a restart, and a replica whose file is gone or
/// expired sending nothing while the other keeps renewing and it serves the result.
@Suite(TestDatabase.required) struct SharedAssertionFileSessionTests {
    let clock = TestClock()
    /// The key the files are signed with, and the one a rotation moves to; the server holds both.
    let keys = [P256.Signing.PrivateKey(), P256.Signing.PrivateKey()]

    /// A fresh assertion of client `authgate` for the token endpoint (its own `jti`), signed
    /// with `keys[key]`, valid for `lifetime` seconds from now.
    func assertion(_ dir: String, key: Int = 0, lifetime: Int = 300) throws -> String {
        let path = dir + "/signer-\(key).pem"
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(keys[key].pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        return try ClientAssertion(
            source: .privateKey(path: path, algorithm: nil, keyID: nil), audience: SharedSessionTests.tokenEndpoint,
            lifetime: lifetime
        ).make(clientID: "authgate", secret: nil, now: clock.wallNow)
    }

    func write(_ text: String, to path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
    }

    /// The codes of the refresh failures `actor` announced after its event `mark`.
    func refreshFailures(_ actor: AuthActor, after mark: UInt64) async -> [String] {
        let last = actor.events.lastEventID
        guard last > mark else { return [] }
        var codes: [String] = []
        for await record in actor.events.subscribe(resumingAfter: mark) {
            if case .refreshFailed(let code, _) = record.event { codes.append(code) }
            if record.id >= last { break }
        }
        return codes
    }

    @Test func replicasRenewOneSessionEachWithItsOwnAssertionFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-asfile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.assertionKeys = ["authgate": keys.map { .p256($0.publicKey) }]
        configuration.accessTokenLifetime = .seconds(120)
        let server = FakeAuthorizationServer(configuration: configuration, clock: clock)
        let files = [dir + "/assertion-a", dir + "/assertion-b"]
        func client(_ i: Int) -> OAuth2Client.Configuration {
            .init(
                tokenEndpoint: SharedSessionTests.tokenEndpoint, clientID: "authgate", authentication: .privateKeyJWT,
                assertion: ClientAssertion(source: .file(path: files[i]), audience: SharedSessionTests.tokenEndpoint))
        }
        for file in files { write(try assertion(dir), to: file) }
        let shared = SharedSessionTests()
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await shared.replica(table: table, server: server, clock: clock, client: client(0))
        let (b, storeB) = try await shared.replica(table: table, server: server, clock: clock, client: client(1))
        try await a.restore()
        let first = try await a.login(.clientCredentials())
        #expect(try await b.restore().isLoggedIn)
        // Each follows the other's commits, as a gateway does.
        for (store, actor) in [(storeA, a), (storeB, b)] { store.follow([.default: actor]) }
        #expect(try await b.token().value == first.value)

        // The first expiry: both replicas asked at once, one renewal, one assertion sent.
        for file in files { write(try assertion(dir), to: file) }
        clock.advance(by: .seconds(150))
        let tokens = try await tokenStorm([a, b], perReplica: 10)
        #expect(Set(tokens).count == 1 && tokens[0] != first.value)
        var statistics = await server.statistics
        #expect(statistics.grants["client_credentials"] == 2, "the login and one renewal")
        #expect(statistics.clientAssertions == 2)

        // The second: the second replica's file is rotated (another key, another assertion)
        // and nothing restarts; its renewal presents the new file, the first follows.
        write(try assertion(dir, key: 1), to: files[1])
        clock.advance(by: .seconds(150))
        let rotated = try await b.token()
        #expect(rotated.value != tokens[0])
        #expect(try await a.token().value == rotated.value, "the first replica follows the second's renewal")
        statistics = await server.statistics
        #expect(statistics.clientAssertions == 3 && statistics.assertionRefusals.isEmpty, "\(statistics.assertionRefusals)")

        // The third and fourth: the first replica's file is gone, then expired. Asked first,
        // it sends nothing and keeps serving its token (and backs off); the second renews
        // with its own file, and the first serves that renewal once the commit reaches it.
        var served = rotated
        for broken in ["gone", "expired"] {
            if broken == "gone" {
                try FileManager.default.removeItem(atPath: files[0])
            } else {
                write(try assertion(dir, lifetime: -10), to: files[0])
            }
            clock.advance(by: .seconds(95))
            let requests = await server.statistics.requests
            let mark = a.events.lastEventID
            #expect(try await a.token().value == served.value, "\(broken): the token is still good, and served")
            #expect(await server.statistics.requests == requests, "\(broken): nothing was sent without an assertion")
            #expect(await refreshFailures(a, after: mark) == ["client_credentials_unusable"], "\(broken)")
            write(try assertion(dir, key: 1), to: files[1])
            let renewed = try await b.token()
            #expect(renewed.value != served.value, "\(broken)")
            #expect(
                await eventually { (try? await a.token().value) == renewed.value },
                "\(broken): the first replica serves the second's renewal")
            #expect(await a.status.isLoggedIn)
            served = renewed
        }
        statistics = await server.statistics
        #expect(statistics.grants["client_credentials"] == 5)
        #expect(statistics.assertionRefusals.isEmpty, "\(statistics.assertionRefusals)")
        for s in [storeA, storeB] { await s.close() }
    }
}
