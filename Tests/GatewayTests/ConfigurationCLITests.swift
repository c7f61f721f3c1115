import Foundation
import Glibc
import TestSupport
import Testing

/// `authgate serve --check-config` itself, as a child process: a bad configuration or secret
/// file exits 78 (EX_CONFIG) with the field on stderr, and no secret file's content ever
/// appears there.
@Suite(.serialized) struct ConfigurationCLITests {
    static let adminToken = "ADMIN-TOKEN-SECRET-3f9a"
    static let clientSecret = "CLIENT-SECRET-VALUE-77c1"

    /// A scratch directory with a state directory, the secret files and a config file.
    struct Scratch {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ag-cli-\(UUID().uuidString)").path
        var config: [String: Any]

        init() throws {
            try FileManager.default.createDirectory(
                atPath: root + "/state", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data((ConfigurationCLITests.adminToken + "\n").utf8).write(to: URL(fileURLWithPath: root + "/admin-token"))
            try Data(ConfigurationCLITests.clientSecret.utf8).write(to: URL(fileURLWithPath: root + "/client-secret"))
            config = [
                "proxy": ["host": "127.0.0.1", "port": 0], "admin": ["host": "127.0.0.1", "port": 0],
                "adminTokenFile": root + "/admin-token",
                "authorization": [
                    "tokenEndpoint": "https://id.example.com/token", "clientID": "gate",
                    "clientSecretFile": root + "/client-secret",
                ],
                "sessions": [
                    [
                        "name": "billing",
                        "authorization": [
                            "tokenEndpoint": "https://billing.example.com/token", "clientID": "gate",
                            "clientSecretFile": root + "/client-secret",
                        ],
                    ]
                ],
                "routes": [["prefix": "/", "upstream": "https://api.example.com"]],
                "stateDirectory": root + "/state", "keyFile": root + "/state/store.key", "createKey": true,
            ]
        }

        func write(_ name: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + name))
            chmod(root + "/" + name, mode)
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    /// Runs `authgate serve --config … --check-config` on `text`; its exit status and stderr.
    func run(_ scratch: Scratch, text: [UInt8]? = nil) throws -> (Int32, String) {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("authgate")
            .path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the authgate product first")
        let file = scratch.root + "/config.json"
        let bytes = try text ?? Array(JSONSerialization.data(withJSONObject: scratch.config))
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let process = Subprocess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--config", file, "--check-config"]
        var environment = ProcessInfo.processInfo.environment
        environment["AUTHGATE_STORE_KEY"] = nil
        environment["CREDENTIALS_DIRECTORY"] = nil
        process.environment = environment
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// (name, change to the scratch, what stderr must name).
    static let cases: [(String, @Sendable (inout Scratch) throws -> [UInt8]?, String)] = [
        ("malformed JSON", { _ in Array("{\n  \"proxy\": {\"host\": \"127.0.0.1\",, }\n}".utf8) }, "not valid JSON: expected"),
        (
            "a misspelt key",
            { s in
                s.config["refreshLaed"] = "50%"
                return nil
            }, "unknown field refreshLaed"
        ),
        (
            "a wrong type",
            { s in
                s.config["loops"] = "2"
                return nil
            }, "loops must be an integer, not a string"
        ),
        (
            "a token exchange audience that is neither a string nor a list of strings",
            { s in
                var authorization = s.config["authorization"] as! [String: Any]
                authorization["tokenExchange"] = ["subjectTokenFile": s.root + "/subject", "audience": ["orders", 7]]
                s.config["authorization"] = authorization
                return nil
            }, "authorization.tokenExchange.audience[1] must be a string, not a number"
        ),
        (
            "an invalid URL in a session",
            { s in
                s.config["sessions"] = [["name": "billing", "authorization": ["tokenEndpoint": "https://bill ing.example/t"]]]
                return nil
            }, "sessions[0].authorization.tokenEndpoint must be an http or https URL"
        ),
        (
            "a control character",
            { s in
                s.config["stateDirectory"] = s.root + "/state\u{1B}[2J"
                return nil
            },
            "stateDirectory must not contain control characters"
        ),
        (
            "a missing client secret file",
            { s in
                try FileManager.default.removeItem(atPath: s.root + "/client-secret")
                return nil
            },
            "authorization.clientSecretFile: cannot read"
        ),
        (
            "an unreadable client secret file (a directory)",
            { s in
                try FileManager.default.removeItem(atPath: s.root + "/client-secret")
                try FileManager.default.createDirectory(atPath: s.root + "/client-secret", withIntermediateDirectories: false)
                return nil
            }, "authorization.clientSecretFile: cannot read"
        ),
        (
            "an empty admin token file",
            { s in
                try s.write("admin-token", Array(" \n".utf8))
                return nil
            }, "adminTokenFile:"
        ),
        (
            "a secret file with control characters",
            { s in
                try s.write("admin-token", Array((adminToken + "\n" + adminToken + "\u{7}").utf8))
                return nil
            },
            "adminTokenFile:"
        ),
        (
            "a secret file that is not UTF-8",
            { s in
                try s.write("client-secret", [0xFF, 0xFE] + Array(clientSecret.utf8))
                return nil
            }, "not UTF-8"
        ),
        (
            "a session's missing secret file",
            { s in
                var sessions = s.config["sessions"] as! [[String: Any]]
                var authorization = sessions[0]["authorization"] as! [String: Any]
                authorization["clientSecretFile"] = s.root + "/nope"
                sessions[0]["authorization"] = authorization
                s.config["sessions"] = sessions
                return nil
            }, "sessions[0].authorization.clientSecretFile: cannot read"
        ),
        (
            "a state directory open to others",
            { s in
                chmod(s.root + "/state", 0o755)
                return nil
            }, "stateDirectory: the state directory"
        ),
    ]

    @Test func aGoodConfigurationPasses() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (status, text) = try run(scratch)
        #expect(status == 0, "\(text)")
    }

    @Test(arguments: 0..<cases.count)
    func aBadConfigurationExits78NamingTheFieldAndNoSecret(_ index: Int) throws {
        let (name, change, expected) = Self.cases[index]
        var scratch = try Scratch()
        defer { scratch.remove() }
        let text = try change(&scratch)
        let (status, stderr) = try run(scratch, text: text)
        #expect(status == 78, "\(name): \(stderr)")
        #expect(stderr.contains(expected), "\(name): \(stderr)")
        #expect(!stderr.contains(Self.adminToken) && !stderr.contains(Self.clientSecret), "\(name): a secret on stderr")
        #expect(!stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(name): a control character on stderr")
    }

    /// Without root, a file its owner cannot read is refused the same way.
    @Test func anUnreadableSecretFileExits78() throws {
        guard geteuid() != 0 else { return }
        let scratch = try Scratch()
        defer { scratch.remove() }
        chmod(scratch.root + "/client-secret", 0)
        let (status, stderr) = try run(scratch)
        #expect(status == 78 && stderr.contains("authorization.clientSecretFile: cannot read"), "\(stderr)")
    }
}
