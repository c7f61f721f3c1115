import Foundation
import Gateway
import Glibc
import Runtime
import TestSupport
import Testing

/// The admin API on a Unix domain socket, end to end: login and session over the socket,
/// the socket's mode, its removal at shutdown.
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

    @Test func aGatewayWhoseSocketDirectoryIsMissingDoesNotStart() async throws {
        try await Stack.run { stack in
            await #expect(throws: ConfigurationError("admin.unix: the directory /nonexistent-authgate does not exist")) {
                try await stack.startGateway { $0.admin = .init(unix: "/nonexistent-authgate/admin.sock") }
            }
        }
    }
}
