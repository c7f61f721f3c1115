import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Testing

/// The fake authorization server checks client assertions as real servers do (RFC 7523 §3):
/// the signature with the client's registered key, `aud`, `exp`, and a `jti` used once. The
/// client's assertions pass; a wrong key, a replay and another audience are refused with
/// `invalid_client` and a precise description.
@Suite struct FakeServerAssertionTests {
    static let endpoint = "https://auth.example.test/oauth/token"
    let clock = TestClock()

    func scratch() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-fake-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func write(_ text: String, to path: String) throws {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
    }

    func server(_ keys: [String: [ClientAssertionVerifier.Key]]) -> FakeAuthorizationServer {
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.assertionKeys = keys
        return FakeAuthorizationServer(configuration: configuration, clock: clock)
    }

    func client(_ transport: any HTTPTransport, _ source: ClientAssertion.Source, clientID: String = "gate") -> OAuth2Client {
        OAuth2Client(
            configuration: .init(
                tokenEndpoint: Self.endpoint, clientID: clientID, clientSecret: "s3cret", authentication: .privateKeyJWT,
                assertion: ClientAssertion(source: source, audience: Self.endpoint)),
            transport: transport, clock: clock)
    }

    @Test func signedAssertionsAreAcceptedEachWithAFreshJTI() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = P256.Signing.PrivateKey()
        try write(key.pemRepresentation, to: dir + "/key.pem")
        let server = server(["gate": [.p256(key.publicKey)]])
        let client = client(server, .privateKey(path: dir + "/key.pem", algorithm: nil, keyID: nil))
        for _ in 0..<3 { _ = try await client.requestToken(.clientCredentials(scope: nil)) }
        let stats = await server.statistics
        #expect(stats.clientAssertions == 3 && stats.assertionRefusals.isEmpty)
    }

    @Test func aKeyTheServerDoesNotKnowIsRefusedWithAPreciseError() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(P256.Signing.PrivateKey().pemRepresentation, to: dir + "/key.pem")
        let server = server(["gate": [.p256(P256.Signing.PrivateKey().publicKey)]])
        let error = await #expect(throws: AuthError.self) {
            try await client(server, .privateKey(path: dir + "/key.pem", algorithm: nil, keyID: nil))
                .requestToken(.clientCredentials(scope: nil))
        }
        #expect(error?.oauthError?.error == "invalid_client")
        #expect(error?.oauthError?.errorDescription == ClientAssertionVerifier.Refusal.badSignature.rawValue)
        #expect(await server.statistics.assertionRefusals == [.badSignature])
    }

    @Test func aReplayedOrMisaddressedAssertionIsRefused() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = P256.Signing.PrivateKey()
        try write(key.pemRepresentation, to: dir + "/key.pem")
        let make = { (audience: String) throws -> String in
            try ClientAssertion(source: .privateKey(path: dir + "/key.pem", algorithm: nil, keyID: nil), audience: audience)
                .make(clientID: "gate", secret: nil, now: clock.wallNow, read: { try Data(contentsOf: URL(fileURLWithPath: $0)) })
        }
        let server = server(["gate": [.p256(key.publicKey)]])
        try write(try make(Self.endpoint), to: dir + "/assertion")
        let replaying = client(server, .file(path: dir + "/assertion"))
        _ = try await replaying.requestToken(.clientCredentials(scope: nil))
        await #expect(throws: AuthError.self) { try await replaying.requestToken(.clientCredentials(scope: nil)) }
        try write(try make("https://elsewhere.example/token"), to: dir + "/assertion")
        await #expect(throws: AuthError.self) { try await replaying.requestToken(.clientCredentials(scope: nil)) }
        #expect(await server.statistics.assertionRefusals == [.replayed, .wrongAudience])
    }

    @Test func clientSecretJWTIsCheckedWithTheClientsSecret() async throws {
        let server = server([:])  // "authgate" is registered with the secret "s3cret"
        _ = try await client(server, .secret, clientID: "authgate").requestToken(.clientCredentials(scope: nil))
        #expect(await server.statistics.clientAssertions == 1)
    }
}
