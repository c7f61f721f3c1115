import Foundation
import Gateway
import Glibc
import Runtime
import TestSupport
import Testing

/// The admin API on a Unix domain socket, end to end: login and session over the socket,
/// the socket's mode, its removal at shutdown, and the `authgate` client commands.
@Suite(.serialized) struct AdminSocketTests {
    /// A fresh directory with a short path, removed after `body`.
    func withSocketDirectory(_ body: (String) async throws -> Void) async throws {
        let dir = "/tmp/aga-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await body(dir)
    }

    @Test func loginAndSessionWorkOverTheAdminSocket() async throws {
        try await withSocketDirectory { dir in
            let path = dir + "/admin.sock"
            try await Stack.run { stack in
                let service = try await stack.startGateway { $0.admin = .init(unix: path, mode: "0660") }
                #expect(service.adminServer.address == .unix(path: path, mode: 0o660))
                var info = stat()
                #expect(lstat(path, &info) == 0)
                #expect(info.st_mode & S_IFMT == S_IFSOCK)
                #expect(info.st_mode & 0o777 == 0o660)
                // Stack.admin speaks to the socket, since that is where the admin API is.
                #expect(try await stack.admin("GET", "/auth/session", token: nil).status == 401)
                #expect(try await stack.loginAlice().status == 200)
                #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
                // The probes stay on the admin listener, without a token.
                #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
                #expect(try await stack.admin("GET", "/livez", token: nil).status == 200)
                // The session the socket logged in serves the proxy.
                #expect(try await stack.proxy("GET", "/api/hello").status == 200)
                await stack.stopGateway()
                #expect(!FileManager.default.fileExists(atPath: path), "the socket file outlived the gateway")
                // A restart binds the same path again.
                try await stack.startGateway { $0.admin = .init(unix: path, mode: "0660") }
                #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
            }
        }
    }

    @Test func aSecondGatewayOnTheSameAdminSocketDoesNotStartNorDisturbTheFirst() async throws {
        try await withSocketDirectory { dir in
            let path = dir + "/admin.sock"
            try await Stack.run { first in
                try await first.startGateway { $0.admin = .init(unix: path) }
                try await Stack.run { second in
                    do {
                        try await second.startGateway { $0.admin = .init(unix: path) }
                        Issue.record("a second gateway took the admin socket of a running one")
                    } catch let error as RuntimeError {
                        #expect(error.systemCode == -EADDRINUSE)
                        #expect(error.description.contains(path))
                    }
                }
                #expect(try await first.admin("GET", "/auth/session").status == 200)
                #expect(FileManager.default.fileExists(atPath: path))
            }
        }
    }

    @Test func aGatewayWhoseSocketDirectoryIsMissingDoesNotStart() async throws {
        try await Stack.run { stack in
            await #expect(
                throws: GatewayError(
                    .unusablePath, field: "admin.unix", "admin.unix: the directory /nonexistent-authgate does not exist")
            ) {
                try await stack.startGateway { $0.admin = .init(unix: "/nonexistent-authgate/admin.sock") }
            }
        }
    }

    @Test func theClientCommandsReachTheAdminSocket() async throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("authgate")
            .path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the authgate product first")
        try await withSocketDirectory { dir in
            let path = dir + "/admin.sock"
            let tokenFile = dir + "/admin-token"
            try Data((Stack.adminToken + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
            try await Stack.run { stack in
                try await stack.startGateway { $0.admin = .init(unix: path) }
                let status = try await run(binary, ["status", "--admin", "unix:\(path)", "--token-file", tokenFile])
                #expect(status.code == 0, "\(status.output)")
                #expect(status.output.hasPrefix("session default: logged out"), "\(status.output)")
                let statusJSON = try await run(
                    binary, ["status", "--json", "--admin", "unix:\(path)", "--token-file", tokenFile])
                #expect(statusJSON.output.contains(#""state":"logged_out""#), "\(statusJSON.output)")
                let passwordFile = dir + "/password"
                try Data("wonderland".utf8).write(to: URL(fileURLWithPath: passwordFile))
                let login = try await run(
                    binary,
                    [
                        "login", "--admin", "unix:\(path)", "--token-file", tokenFile, "--username", "alice",
                        "--password-file", passwordFile,
                    ])
                #expect(login.code == 0, "\(login.output)")
                #expect(login.output.contains(#""state":"logged_in""#), "\(login.output)")
                #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
                let wrongToken = try await run(binary, ["status", "--admin", "unix:\(path)"], token: "not-the-token")
                #expect(wrongToken.code == 1)
                #expect(wrongToken.output.contains("admin-token-required"), "\(wrongToken.output)")
                let relative = try await run(binary, ["status", "--admin", "unix:admin.sock", "--token-file", tokenFile])
                #expect(relative.code == 64, "\(relative.output)")
                // `events` follows the stream over the socket until interrupted.
                let events = try ChildProcess(["events", "--admin", "unix:\(path)", "--token-file", tokenFile, "--json"])
                defer { events.stop() }
                #expect(await eventually { events.output.contains(#""type":"state""#) }, "\(events.output)\(events.errors)")
                #expect(events.output.contains(#""state":"logged_in""#), "\(events.output)")
                events.signal(SIGINT)
                #expect(await events.wait() == 0)
            }
        }
    }

    /// Runs the `authgate` binary; returns its exit code and everything it printed.
    func run(_ binary: String, _ arguments: [String], token: String? = nil) async throws -> (code: Int32, output: String) {
        try await onThread {
            let process = Subprocess()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            environment["AUTHGATE_ADMIN_TOKEN"] = token
            process.environment = environment
            let out = Pipe()
            process.standardOutput = out
            process.standardError = out
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
