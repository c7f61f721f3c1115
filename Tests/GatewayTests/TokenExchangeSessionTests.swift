import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Gateway
import TestSupport
import Testing

/// A session a token exchange (RFC 8693) started, through the admin API: the configured
/// audiences each sent as a field of their own (§2.1), and `GET /auth/session` naming what
/// the exchange issued (`issued_token_type`, §2.2.1), after a restart too, and only while
/// that session lasts.
@Suite struct TokenExchangeSessionTests {
    let issuerKey = P256.Signing.PrivateKey()

    var fake: FakeAuthorizationServer.Configuration {
        var c = FakeAuthorizationServer.Configuration()
        c.trustedJWTIssuers = ["workload": [.p256(issuerKey.publicKey)]]
        c.exchangeTargets = ["orders-api", "reports-api"]
        return c
    }

    /// Writes a subject token of the trusted issuer `workload` for the stack's token
    /// endpoint to `path`. It lives two minutes, as a workload token would, so it is written
    /// again just before each use: under the sanitizers a step can wait that long.
    func writeSubjectToken(_ stack: Stack, to path: String) throws {
        let keyPath = path + ".key.pem"
        #expect(
            FileManager.default.createFile(
                atPath: keyPath, contents: Data(issuerKey.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        let jwt = try ClientAssertion(
            source: .privateKey(path: keyPath, algorithm: nil, keyID: nil),
            audience: "http://127.0.0.1:\(stack.authServer.port)/oauth/token", lifetime: 120
        ).make(clientID: "workload", secret: nil, now: Date())
        #expect(FileManager.default.createFile(atPath: path, contents: Data(jwt.utf8), attributes: [.posixPermissions: 0o600]))
    }

    static func session(_ stack: Stack) async throws -> [String: Any] {
        Stack.json(try await stack.admin("GET", "/auth/session"))
    }

    @Test func theSessionNamesWhatTheExchangeIssuedUntilItEnds() async throws {
        try await Stack.run(fake: fake) { stack in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-tx-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let subject = dir + "/subject-token"
            try writeSubjectToken(stack, to: subject)
            let exchange: (inout GatewayConfiguration) -> Void = {
                $0.authorization.tokenExchange = .init(subjectTokenFile: subject, audience: ["orders-api", "reports-api"])
            }
            try await stack.startGateway(configure: exchange)
            #expect(try await Self.session(stack)["issued_token_type"] == nil, "logged out")
            try writeSubjectToken(stack, to: subject)
            let login = try await stack.admin(
                "POST", "/auth/login", json: #"{"grant_type":"urn:ietf:params:oauth:grant-type:token-exchange"}"#)
            let refusals = await stack.authorization.statistics.grantRefusals
            #expect(login.status == 200, "\(refusals)")
            let type = TokenExchangeSettings.accessTokenType
            #expect(try await Self.session(stack)["issued_token_type"] as? String == type)
            #expect(Stack.json(login)["issued_token_type"] as? String == type, "the login answers with the session")
            let sent = await stack.authorization.statistics.lastExchangeFields
            #expect(sent.filter { $0.hasPrefix("audience=") } == ["audience=orders-api", "audience=reports-api"], "\(sent)")

            // Kept with the tokens: a restart shows it without asking the server.
            await stack.stopGateway()
            try writeSubjectToken(stack, to: subject)
            try await stack.startGateway(configure: exchange)
            let restored = try await Self.session(stack)
            #expect(restored["state"] as? String == "logged_in")
            #expect(restored["issued_token_type"] as? String == type)
            #expect(await stack.authorization.statistics.grants[Grant.tokenExchangeType] == 1)

            // A session from another grant has none.
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await Self.session(stack)["issued_token_type"] == nil)
            #expect(!stack.logs.all.contains(try String(contentsOfFile: subject, encoding: .utf8)))
        }
    }
}
