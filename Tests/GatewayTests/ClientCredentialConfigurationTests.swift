import Crypto
import Foundation
import Gateway
import Testing

/// `private_key_jwt` and `client_secret_jwt` in the configuration: the rules between the
/// fields, and the key or assertion file checked at start, each refusal naming the field and
/// the file, never its contents.
@Suite struct ClientCredentialConfigurationTests {
    static func load(_ authorization: [String: Any]) -> String? { AuthorizationFixture.refusal(authorization) }

    @Test(
        arguments: [
            (["clientAuthentication": "private_key_jwt"], "authorization.clientKeyFile"),
            (
                ["clientAuthentication": "private_key_jwt", "clientKeyFile": "/k", "clientAssertionFile": "/t"],
                "exclude each other"
            ),
            (["clientAuthentication": "post", "clientKeyFile": "/k"], "authorization.clientKeyFile is used only with"),
            (["clientAuthentication": "basic", "clientAssertionAudience": "issuer"], "authorization.clientAssertionAudience"),
            (
                ["clientAuthentication": "private_key_jwt", "clientKeyFile": "/k", "clientKeyAlgorithm": "HS256"],
                "ES256, PS256 or RS256"
            ),
            (
                ["clientAuthentication": "private_key_jwt", "clientKeyFile": "/k", "clientAssertionAudience": "issuer"],
                "authorization.issuer"
            ),
            (
                ["clientAuthentication": "private_key_jwt", "clientKeyFile": "/k", "clientAssertionAudience": "aud"],
                "tokenEndpoint or issuer"
            ),
            (
                ["clientAuthentication": "private_key_jwt", "clientAssertionFile": "/t", "clientKeyID": "k"],
                "describe a clientKeyFile"
            ),
            (["clientAuthentication": "client_secret_jwt"], "authorization.clientSecretFile"),
            (
                ["clientAuthentication": "jwt"],
                "must be basic, post, none, private_key_jwt, client_secret_jwt, tls_client_auth or"
            ),
        ] as [([String: String], String)])
    func conflictingOrMissingFieldsAreRefused(fields: [String: String], expected: String) throws {
        let message = try #require(Self.load(fields), "\(fields) was accepted")
        #expect(message.contains(expected), "\(message)")
    }

    @Test func completeSettingsAreAccepted() {
        #expect(
            Self.load(["clientAuthentication": "private_key_jwt", "clientKeyFile": "/k", "clientKeyAlgorithm": "PS256"]) == nil)
        #expect(
            Self.load(["clientAuthentication": "private_key_jwt", "clientAssertionFile": "/var/run/secrets/tokens/t"]) == nil)
        #expect(Self.load(["clientAuthentication": "client_secret_jwt", "clientSecretFile": "/s"]) == nil)
    }

    @Test func keyAndAssertionFilesAreCheckedNamingTheFieldNotTheContents() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-cred-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = P256.Signing.PrivateKey()
        func write(_ name: String, _ text: String, mode: Int) -> String {
            let path = dir + "/" + name
            #expect(
                FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]))
            return path
        }
        func check(_ a: GatewayConfiguration.Authorization) -> String? {
            do {
                try GatewayConfiguration.checkClientCredentialFiles(a, at: "authorization")
                return nil
            } catch {
                return String(describing: error)
            }
        }
        func keyed(_ path: String, algorithm: String? = nil) -> GatewayConfiguration.Authorization {
            GatewayConfiguration.Authorization(
                tokenEndpoint: "https://id.example.com/token", clientID: "gate", clientAuthentication: "private_key_jwt",
                clientKeyFile: path, clientKeyAlgorithm: algorithm)
        }
        #expect(check(keyed(write("good.pem", key.pemRepresentation, mode: 0o600))) == nil)
        let open = try #require(check(keyed(write("open.pem", key.pemRepresentation, mode: 0o640))))
        #expect(open.contains("authorization.clientKeyFile") && open.contains("readable by others"))
        #expect(!open.contains(key.pemRepresentation.split(separator: "\n")[1]), "no byte of the key")
        let missing = try #require(check(keyed(dir + "/none.pem")))
        #expect(missing.contains("authorization.clientKeyFile") && missing.contains("no such file"))
        let junk = try #require(check(keyed(write("junk.pem", "hello", mode: 0o600))))
        #expect(junk.contains("holds no EC P-256 or RSA private key"))
        let wrong = try #require(check(keyed(write("ec.pem", key.pemRepresentation, mode: 0o600), algorithm: "PS256")))
        #expect(wrong.contains("authorization.clientKeyAlgorithm"))

        func asserted(_ path: String) -> GatewayConfiguration.Authorization {
            GatewayConfiguration.Authorization(
                tokenEndpoint: "https://id.example.com/token", clientID: "gate", clientAuthentication: "private_key_jwt",
                clientAssertionFile: path)
        }
        let header = Data(#"{"alg":"RS256"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        let later = Int(Date().timeIntervalSince1970) + 3600
        let claims = Data(#"{"exp":\#(later)}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        #expect(check(asserted(write("token", "\(header).\(claims).c2ln\n", mode: 0o644))) == nil)
        let expired = Data(#"{"exp":1000}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        let old = try #require(check(asserted(write("old", "\(header).\(expired).c2ln", mode: 0o644))))
        #expect(old.contains("authorization.clientAssertionFile") && old.contains("expired"))
        let notJWT = try #require(check(asserted(write("text", "s3cret-value", mode: 0o644))))
        #expect(notJWT.contains("does not hold one compact JWT") && !notJWT.contains("s3cret-value"))
    }

    @Test func theDPoPKeyIsCheckedAsAClientKeyIs() throws {
        #expect(
            Self.load(["dpop": ["keyFile": "/k", "algorithm": "RS256"]])?.contains(
                "authorization.dpop.algorithm must be ES256 or PS256") == true)
        #expect(Self.load(["dpop": ["keyFile": "/k", "algorithm": "ES256"]]) == nil)
        #expect(Self.load(["dpop": ["generate": true]]) == nil)
        #expect(Self.load(["dpop": ["generate": true, "algorithm": "PS256"]]) == nil)
        #expect(
            Self.load(["dpop": [:] as [String: Any]])?.contains("authorization.dpop needs keyFile, or generate: true") == true)
        #expect(Self.load(["dpop": ["generate": false]])?.contains("authorization.dpop needs keyFile") == true)
        #expect(
            Self.load(["dpop": ["keyFile": "/k", "generate": true]])?.contains(
                "authorization.dpop.generate cannot be true beside authorization.dpop.keyFile") == true)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-dpop-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pem = P256.Signing.PrivateKey().pemRepresentation
        func check(_ mode: Int, algorithm: String? = nil) -> String? {
            let path = dir + "/key-\(mode).pem"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: mode]))
            var a = GatewayConfiguration.Authorization(tokenEndpoint: "https://id.example.com/token", clientID: "gate")
            a.dpop = .init(keyFile: path, algorithm: algorithm)
            do {
                try GatewayConfiguration.checkClientCredentialFiles(a, at: "authorization")
                return nil
            } catch {
                return String(describing: error)
            }
        }
        #expect(check(0o600) == nil)
        let open = try #require(check(0o644))
        #expect(open.contains("authorization.dpop.keyFile") && open.contains("readable by others"), "\(open)")
        let wrong = try #require(check(0o600, algorithm: "PS256"))
        #expect(wrong.contains("authorization.dpop.algorithm") && wrong.contains("PS256 cannot be signed"), "\(wrong)")
        #expect(!open.contains(pem.split(separator: "\n")[1]), "no byte of the key")
    }
}
