import Crypto
import Foundation
import Testing

/// `authgate serve` with its configuration in three layers, as a real process: the file,
/// `AUTHGATE_*` variables over it, flags over those; `--print-config` shows the result with
/// each value's source and no secret; a variable or flag that names no field exits 78.
@Suite(.serialized) struct ConfigurationLayersCLITests {
    static let adminToken = "ADMIN-TOKEN-SECRET-91d2"
    static let clientSecret = "CLIENT-SECRET-VALUE-5e7a"
    static let storeKey = Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()

    func withScratch(_ body: (String) async throws -> Void) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ChildProcess.binary), "build the authgate product first")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ag-layers-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: root + "/state", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data((Self.adminToken + "\n").utf8).write(to: URL(fileURLWithPath: root + "/admin-token"))
        try Data(Self.clientSecret.utf8).write(to: URL(fileURLWithPath: root + "/client-secret"))
        let config: [String: Any] = [
            "proxy": ["host": "127.0.0.1", "port": 18080], "admin": ["host": "127.0.0.1", "port": 18081],
            "adminTokenFile": root + "/admin-token",
            "authorization": [
                "tokenEndpoint": "https://id.example.com/token", "clientID": "gate", "clientSecretFile": root + "/client-secret",
            ],
            "routes": [["prefix": "/", "upstream": "https://api.example.com"]], "stateDirectory": root + "/state",
        ]
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: root + "/authgate.json"))
        try await body(root)
    }

    @Test func printConfigShowsEachValueWithItsLayerAndNoSecret() async throws {
        try await withScratch { root in
            let child = try ChildProcess(
                [
                    "serve", "--config", root + "/authgate.json", "--print-config", "--loops", "2", "--routes-0-strip-prefix",
                    "--routes-1-prefix", "/b", "--routes-1-upstream", "https://b.example.com",
                ],
                environment: [
                    "AUTHGATE_STORE_KEY": Self.storeKey, "AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT": "https://env.example.com/token",
                    "AUTHGATE_LOOPS": "3", "AUTHGATE_PROXY_PORT": "18090",
                ])
            #expect(await child.wait() == 0, "\(child.errors)")
            let lines = child.lines
            func line(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) } }
            #expect(
                line("authorization.tokenEndpoint = \"https://env.example.com/token\"")?.hasSuffix(
                    "# env AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT") == true, "\(lines)")
            #expect(line("loops = 2")?.hasSuffix("# flag --loops") == true, "\(lines)")
            #expect(line("proxy.port = 18090")?.hasSuffix("# env AUTHGATE_PROXY_PORT") == true)
            #expect(line("proxy.host = \"127.0.0.1\"")?.hasSuffix("# file \(root)/authgate.json") == true)
            #expect(line("routes[0].stripPrefix = true")?.hasSuffix("# flag --routes-0-strip-prefix") == true)
            #expect(line("routes[1].upstream = \"https://b.example.com\"")?.hasSuffix("# flag --routes-1-upstream") == true)
            #expect(line("refreshSkewSeconds ")?.hasSuffix("# default") == true)
            #expect(line("secret: admin token = <redacted>")?.hasSuffix("(adminTokenFile)") == true)
            #expect(line("secret: store key = <redacted>")?.hasSuffix("# env AUTHGATE_STORE_KEY") == true)
            for secret in [Self.adminToken, Self.clientSecret, Self.storeKey] {
                #expect(!child.output.contains(secret) && !child.errors.contains(secret))
            }
        }
    }

    /// The sidecar's own identity without a shared secret: `--print-config` shows the
    /// private_key_jwt, token exchange, DPoP and autoLogin fields with their layers, and
    /// nothing of the files they name (the key, the subject token).
    @Test func printConfigShowsTheIdentityFieldsAndNothingOfTheirFiles() async throws {
        try await withScratch { root in
            let key = P256.Signing.PrivateKey().pemRepresentation
            let subjectToken = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZC1zZWNyZXQifQ.c2lnbmF0dXJlLXNlY3JldA"
            for (name, text) in [("client-key.pem", key), ("subject-token", subjectToken)] {
                #expect(
                    FileManager.default.createFile(
                        atPath: root + "/" + name, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
            }
            let config: [String: Any] = [
                "proxy": ["host": "127.0.0.1", "port": 18080], "admin": ["host": "127.0.0.1", "port": 18081],
                "adminTokenFile": root + "/admin-token",
                "authorization": [
                    "tokenEndpoint": "https://id.example.com/token", "clientID": "gate",
                    "clientAuthentication": "private_key_jwt", "clientKeyFile": root + "/client-key.pem",
                    "tokenExchange": ["subjectTokenFile": root + "/subject-token", "audience": "orders-api"],
                    "dpop": ["generate": true],
                ],
                "routes": [["prefix": "/", "upstream": "https://api.example.com"]], "stateDirectory": root + "/state",
            ]
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: root + "/identity.json"))
            let child = try ChildProcess(
                ["serve", "--config", root + "/identity.json", "--print-config"],
                environment: ["AUTHGATE_STORE_KEY": Self.storeKey, "AUTHGATE_AUTHORIZATION_AUTO_LOGIN_GRANT": "token-exchange"])
            #expect(await child.wait() == 0, "\(child.errors)")
            let lines = child.lines
            func line(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) } }
            let file = "# file \(root)/identity.json"
            #expect(line("authorization.clientAuthentication = \"private_key_jwt\"")?.hasSuffix(file) == true, "\(lines)")
            #expect(line("authorization.clientKeyFile = \"\(root)/client-key.pem\"")?.hasSuffix(file) == true)
            #expect(line("authorization.tokenExchange.subjectTokenFile = ")?.hasSuffix(file) == true, "\(lines)")
            #expect(line("authorization.tokenExchange.audience = \"orders-api\"")?.hasSuffix(file) == true)
            #expect(line("authorization.dpop.generate = true")?.hasSuffix(file) == true)
            #expect(
                line("authorization.autoLogin.grant = \"token-exchange\"")?.hasSuffix(
                    "# env AUTHGATE_AUTHORIZATION_AUTO_LOGIN_GRANT") == true, "\(lines)")
            let keyBody = key.split(separator: "\n").filter { !$0.hasPrefix("-----") }
            for secret in [subjectToken, Self.adminToken, Self.storeKey] + keyBody.map(String.init) {
                #expect(!child.output.contains(secret) && !child.errors.contains(secret))
            }
            #expect(!child.output.contains("PRIVATE KEY"))
        }
    }

    @Test func aVariableOrFlagThatNamesNoFieldOrCarriesASecretExits78() async throws {
        try await withScratch { root in
            let cases: [([String], [String: String], String)] =
                [
                    ([], ["AUTHGATE_LOPS": "2"], "unknown environment variable AUTHGATE_LOPS"),
                    (["--lops", "2"], [:], "unknown flag --lops"),
                    (["--client-secret", Self.clientSecret], [:], "--client-secret: secrets are never taken from flags"),
                    (
                        [], ["AUTHGATE_PROXY_PORT": "http"],
                        "proxy.port must be an integer, not a string (set by env AUTHGATE_PROXY_PORT)"
                    ),
                    (["--routes-0-upstream", "ftp://x"], [:], "(set by flag --routes-0-upstream)"),
                    (
                        ["--print-config", "--store-kind", "postgres"],
                        ["AUTHGATE_STORE_URL": "postgres://gate:\(Self.clientSecret)@127.0.0.1/gate"],
                        "store.url: must not hold a password"
                    ),
                ]
                // A password with characters a URL parser reads as the start of a fragment,
                // path or query: it would see no password at all.
                + ["#", "/", "?", "@", "#/?"].map { c in
                    (
                        ["--print-config", "--store-kind", "postgres"],
                        ["AUTHGATE_STORE_URL": "postgres://gate:pa\(c)\(Self.clientSecret)@127.0.0.1/gate"],
                        "store.url: must not hold a password"
                    )
                }
            for (flags, env, message) in cases {
                let child = try ChildProcess(
                    ["serve", "--config", root + "/authgate.json", "--check-config"] + flags,
                    environment: env.merging(["AUTHGATE_STORE_KEY": Self.storeKey]) { a, _ in a })
                #expect(await child.wait() == 78, "\(flags) \(env)")
                #expect(child.errors.contains(message), "\(child.errors)")
                #expect(
                    !child.errors.contains(Self.clientSecret) && !child.output.contains(Self.clientSecret),
                    "\(flags) printed a secret")
            }
        }
    }
}
