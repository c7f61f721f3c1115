import Foundation
import TestSupport
import Testing

/// `authgate serve` as a child process with `store.kind: postgres`: a database it cannot use
/// stops it at start with exit 78 (EX_CONFIG), the field named on stderr and no password
/// there.
@Suite(TestDatabase.required, .serialized) struct ServeStoreConfigurationTests {
    struct Scratch {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ag-pg-\(UUID().uuidString)").path

        init() throws {
            try FileManager.default.createDirectory(
                atPath: root + "/state", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data("admin-token-value\n".utf8).write(to: URL(fileURLWithPath: root + "/admin-token"))
        }

        func config(store: [String: Any]) -> [String: Any] {
            [
                "proxy": ["host": "127.0.0.1", "port": 0], "admin": ["host": "127.0.0.1", "port": 0],
                "adminTokenFile": root + "/admin-token",
                "authorization": ["tokenEndpoint": "http://127.0.0.1:9/token", "clientID": "gate"],
                "routes": [["prefix": "/", "upstream": "http://127.0.0.1:9"]],
                "stateDirectory": root + "/state", "store": store,
            ]
        }

        func passwordFile(_ password: String) throws -> String {
            let path = root + "/db-password-\(UUID().uuidString)"
            try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    /// Runs `authgate serve` on `config` for at most 30 s; its exit status and stderr.
    func serve(_ scratch: Scratch, _ config: [String: Any]) throws -> (Int32, String) {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("authgate")
            .path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the authgate product first")
        let file = scratch.root + "/config.json"
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: file))
        let process = Subprocess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--config", file]
        // serve refuses AUTHGATE_* variables that name no field: the harness's own stay out.
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AUTHGATE_") }
        environment["AUTHGATE_STORE_KEY"] = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        process.environment = environment
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: killer)
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        killer.cancel()
        return (process.terminationStatus, text)
    }

    @Test func aDatabaseItCannotUseStopsServeWithExit78NamingTheField() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch.root) }
        let app = try TestDatabase.app()
        let wrong = "wrong-password-\(UUID().uuidString)"
        let closedPort = try ClosedPort.find()
        let cases: [(String, [String: Any], String)] = [
            (
                "a wrong password",
                ["kind": "postgres", "url": app.storeURL, "tlsMode": "disable", "passwordFile": try scratch.passwordFile(wrong)],
                "store.passwordFile: PostgreSQL refused the role"
            ),
            (
                "an unreachable server",
                [
                    "kind": "postgres", "url": "postgres://\(app.user)@127.0.0.1:\(closedPort)/\(app.database)",
                    "tlsMode": "disable",
                    "passwordFile": try scratch.passwordFile(app.password ?? ""),
                ],
                "store.url: cannot connect to 127.0.0.1:\(closedPort)"
            ),
            (
                "a password inline in the URL",
                ["kind": "postgres", "url": "postgres://\(app.user):\(wrong)@\(app.host):\(app.port)/\(app.database)"],
                "store.url: must not hold a password"
            ),
            ("a missing URL", ["kind": "postgres"], "store.url is required"),
            ("an unknown kind", ["kind": "redis"], "store.kind must be file or postgres"),
            ("a postgres field with the file store", ["table": "x"], "store.table applies only to store.kind postgres"),
            (
                "a lease term of 0", ["kind": "postgres", "url": app.storeURL, "leaseSeconds": 0],
                "store.leaseSeconds must be 1…300"
            ),
            (
                "a lease term of an hour", ["kind": "postgres", "url": app.storeURL, "leaseSeconds": 3600],
                "store.leaseSeconds must be 1…300"
            ),
            ("a lease term with the file store", ["leaseSeconds": 5], "store.leaseSeconds applies only to store.kind postgres"),
        ]
        for (name, store, expected) in cases {
            let (status, stderr) = try serve(scratch, scratch.config(store: store))
            #expect(status == 78, "\(name): exit \(status), \(stderr)")
            #expect(stderr.contains(expected), "\(name): \(stderr)")
            #expect(!stderr.contains(wrong), "\(name) printed the password")
            if let password = app.password { #expect(!stderr.contains(password), "\(name) printed the password") }
        }
    }
}
