import AuthCore
import Foundation
import Gateway
import Glibc
import Logging
import TestSupport
import Testing

/// The state directory and the key file hold the sealed tokens and the key that opens them:
/// owner-only, or AuthGate does not start.
@Suite(.serialized) struct StateDirectoryTests {
    /// A random key as the base64 text a key file holds.
    static var keyText: String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    func scratch() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ag-perm-\(UUID().uuidString)").path
        mkdir(path, 0o700)
        return path
    }

    func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o7777 : 0
    }

    /// Creates the directory with `mode`; a test over a directory that is not there (an
    /// absent path is fine to the checks) would prove nothing, so a failure here is recorded.
    func makeDirectory(_ path: String, mode: mode_t) {
        #expect(mkdir(path, 0o700) == 0, "mkdir \(path)")
        #expect(chmod(path, mode) == 0, "chmod \(path)")
        #expect(self.mode(path) == mode, "\(path)")
    }

    /// Creates a key file with `mode` (recorded as a failure when it cannot, as above).
    func makeFile(_ path: String, mode: mode_t) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(Self.keyText.utf8)), "create \(path)")
        #expect(chmod(path, mode) == 0, "chmod \(path)")
        #expect(self.mode(path) == mode, "\(path)")
    }

    @Test func theGatewayCreatesTheStateDirectoryOwnerOnly() async throws {
        let root = scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let stack = try await Stack(stateDirectory: root + "/nested/state")
        var configuration = stack.configuration
        configuration.keyFile = nil
        try await GatewayService.withGateway(
            configuration: configuration,
            secrets: .init(clientSecret: "s3cret", adminToken: Stack.adminToken, storeKey: TokenStoreKey.random()),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), grace: .zero
        ) { _ in
            #expect(mode(root + "/nested/state") == 0o700)
        }
        await stack.stop()
    }

    @Test func stateDirectoryTheGroupOrOthersCanEnterIsRefusedNamingThePath() throws {
        let root = scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for open: mode_t in [0o755, 0o750, 0o710, 0o701, 0o707, 0o770] {
            let path = root + "/state-\(String(open, radix: 8))"
            makeDirectory(path, mode: open)
            let error = #expect(throws: GatewayError.self) { try StateDirectory.prepare(path) }
            #expect(error?.description.contains(path) == true, "\(String(describing: error))")
        }
        let closed = root + "/closed"
        makeDirectory(closed, mode: 0o700)
        try StateDirectory.prepare(closed)
        try StateDirectory.prepare(root + "/fresh")
        #expect(mode(root + "/fresh") == 0o700)
    }

    @Test func keyFileTheGroupOrOthersCanReadIsRefusedNamingThePath() throws {
        let root = scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for open: mode_t in [0o644, 0o640, 0o604, 0o660, 0o620] {
            let path = root + "/key-\(String(open, radix: 8))"
            makeFile(path, mode: open)
            let error = #expect(throws: GatewayError.self) { try StateDirectory.checkKeyFile(path) }
            #expect(error?.description.contains(path) == true, "\(String(describing: error))")
        }
        for closed: mode_t in [0o600, 0o400] {
            let path = root + "/key-\(String(closed, radix: 8))"
            makeFile(path, mode: closed)
            try StateDirectory.checkKeyFile(path)
        }
        try StateDirectory.checkKeyFile(root + "/absent")
    }

    @Test func theGatewayRefusesToStartOverAStateDirectoryOthersCanRead() async throws {
        let root = scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        makeDirectory(root + "/state", mode: 0o755)
        let stack = try await Stack(stateDirectory: root + "/state")
        defer { Task { await stack.stop() } }
        await #expect(throws: GatewayError.self) {
            _ = try await GatewayService.start(
                configuration: stack.configuration,
                secrets: .init(clientSecret: "s3cret", adminToken: Stack.adminToken, storeKey: TokenStoreKey.random()),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        }
    }

    /// `authgate serve` itself: exit 78 and the path on stderr.
    @Test(arguments: ["stateDirectory", "keyFile"])
    func serveExitsWith78NamingTheOpenPath(_ what: String) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("authgate")
            .path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the authgate product first")
        let root = scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let state = root + "/state"
        let key = root + "/store.key"
        makeDirectory(state, mode: what == "stateDirectory" ? 0o755 : 0o700)
        try Data(Self.keyText.utf8).write(to: URL(fileURLWithPath: key))
        chmod(key, what == "keyFile" ? 0o644 : 0o600)
        let config = """
            { "proxy": {"host": "127.0.0.1", "port": 0}, "admin": {"host": "127.0.0.1", "port": 0},
              "adminTokenDisabled": true,
              "authorization": {"tokenEndpoint": "http://127.0.0.1:9/token", "clientID": "c", "clientAuthentication": "none"},
              "routes": [{"prefix": "/", "upstream": "http://127.0.0.1:9"}],
              "stateDirectory": "\(state)", "keyFile": "\(key)", "loops": 1 }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: root + "/config.json"))
        let process = Subprocess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--config", root + "/config.json"]
        var environment = ProcessInfo.processInfo.environment
        environment["AUTHGATE_STORE_KEY"] = nil
        environment["CREDENTIALS_DIRECTORY"] = nil
        process.environment = environment
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date() + 120
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            Issue.record("authgate serve started over an open \(what)")
            return
        }
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 78, "\(text)")
        #expect(text.contains(what == "stateDirectory" ? state : key), "\(text)")
    }
}
