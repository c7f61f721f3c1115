import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Testing

@testable import PostgresStore

/// Replicas whose session comes from a grant that needs no person (the JWT bearer grant,
/// token exchange) share it through the table, each presenting the assertion or subject
/// token of its own file: one renewal per expiry across the replicas (these grants issue no
/// refresh token; the renewal is the grant again), every replica serving its result, and a
/// replica whose file is gone followed by one that still has its own.
@Suite(TestDatabase.required) struct SharedGrantSessionTests {
    enum Kind: String, CaseIterable, Sendable {
        case jwtBearer = "jwt-bearer"
        case tokenExchange = "token-exchange"

        var grantType: String { self == .jwtBearer ? Grant.jwtBearerType : Grant.tokenExchangeType }
        var login: Grant { self == .jwtBearer ? .jwtBearer() : .tokenExchange() }
    }

    let issuerKey = P256.Signing.PrivateKey()
    let clock = TestClock()

    /// A JWT of the trusted issuer `workload`, fresh (its own `jti`) each time.
    func workloadJWT(_ dir: String) throws -> String {
        let path = dir + "/issuer.pem"
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(issuerKey.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        return try ClientAssertion(
            source: .privateKey(path: path, algorithm: nil, keyID: nil), audience: SharedSessionTests.tokenEndpoint,
            lifetime: 300
        ).make(clientID: "workload", secret: nil, now: clock.wallNow)
    }

    func write(_ text: String, to path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
    }

    @Test(arguments: Kind.allCases)
    func replicasRenewOneSessionEachWithItsOwnFile(kind: Kind) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-grants-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.trustedJWTIssuers = ["workload": [.p256(issuerKey.publicKey)]]
        configuration.exchangeTargets = ["orders-api"]
        configuration.accessTokenLifetime = .seconds(120)
        configuration.tokenFormat = .jwt
        let server = FakeAuthorizationServer(configuration: configuration, clock: clock)
        func client(_ i: Int) -> OAuth2Client.Configuration {
            let file = dir + "/credential-\(i)"
            return .init(
                tokenEndpoint: SharedSessionTests.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                jwtBearer: kind == .jwtBearer ? JWTBearerGrantSettings(assertionFile: file) : nil,
                tokenExchange: kind == .tokenExchange
                    ? TokenExchangeSettings(subjectTokenFile: file, audiences: ["orders-api"]) : nil)
        }
        for i in 0..<2 { write(try workloadJWT(dir), to: dir + "/credential-\(i)") }
        let shared = SharedSessionTests()
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await shared.replica(table: table, server: server, clock: clock, client: client(0))
        let (b, storeB) = try await shared.replica(table: table, server: server, clock: clock, client: client(1))
        try await a.restore()
        let first = try await a.login(kind.login)
        #expect(try await b.restore().isLoggedIn)
        #expect(try await b.token().value == first.value)

        // The first expiry: both replicas asked at once, one renewal.
        for i in 0..<2 { write(try workloadJWT(dir), to: dir + "/credential-\(i)") }
        clock.advance(by: .seconds(150))
        let tokens = try await tokenStorm([a, b], perReplica: 10)
        #expect(Set(tokens).count == 1 && tokens[0] != first.value)
        #expect(await server.statistics.grants[kind.grantType] == 2, "the login and one renewal")

        // The second: the first replica's file is gone; the second renews with its own, and
        // the first serves what it stored.
        try FileManager.default.removeItem(atPath: dir + "/credential-0")
        write(try workloadJWT(dir), to: dir + "/credential-1")
        clock.advance(by: .seconds(150))
        let renewed = try await b.token()
        #expect(renewed.value != tokens[0])
        #expect(try await a.token().value == renewed.value, "the first replica follows the second's renewal")
        let statistics = await server.statistics
        #expect(statistics.grants[kind.grantType] == 3)
        #expect(statistics.grantRefusals.isEmpty, "\(statistics.grantRefusals)")
        #expect(statistics.refreshAttempts == 0)
        for s in [storeA, storeB] { await s.close() }
    }
}
