import Foundation
import Glibc
import HTTPWire
import Runtime
import TestSupport
import Testing

/// `HTTPServer` on a Unix domain socket: the same connections as over TCP, a socket file
/// with the configured mode, stale files replaced, live sockets and other files left alone,
/// and the file removed at shutdown.
@Suite(.serialized) struct UnixSocketListenerTests {
    /// A fresh directory with a short path (a socket path has at most 107 bytes).
    func scratch() throws -> String {
        let dir = "/tmp/ags-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        return dir
    }

    func withScratch(_ body: (String) async throws -> Void) async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await body(dir)
    }

    @Test func aServerOnAUnixSocketAnswersHTTPOnSeveralLoops() async throws {
        try await withScratch { dir in
            let path = dir + "/admin.sock"
            // Two loops: the second shares the socket the first bound.
            try await TestServer.with(loops: 2, address: .unix(path: path, mode: 0o660)) { server in
                #expect(server.port == 0)
                #expect(server.server.address == .unix(path: path, mode: 0o660))
                let client = try RawClient(unixPath: path)
                for i in 0..<20 {
                    try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)")
                    let r = try client.readResponse()
                    #expect(r.status == 200)
                    #expect(r.text == String(i))
                }
                let payload = String(repeating: "0123456789", count: 30_000)
                try client.send("POST /stream-echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(payload.utf8.count)\r\n\r\n")
                try client.send(payload)
                #expect(try client.readResponse().text == payload)
            }
        }
    }

    /// Every loop accepts from the one socket: while the first loop is busy, a new
    /// connection is served by the second rather than waiting for the first.
    @Test(.timeLimit(.minutes(1))) func everyLoopAcceptsConnectionsOnAUnixSocket() async throws {
        try await withScratch { dir in
            let path = dir + "/proxy.sock"
            try await TestServer.with(loops: 2, address: .unix(path: path, mode: 0o600)) { server in
                let first = server.group.loops[0]
                let release = DispatchSemaphore(value: 0)
                let busy = DispatchSemaphore(value: 0)
                first.execute {
                    busy.signal()
                    release.wait()
                }
                busy.wait()
                defer { release.signal() }
                let client = try RawClient(unixPath: path, timeoutSeconds: 20)
                try client.send("GET /loop HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try client.readResponse().text == server.group.loops[1].name)
            }
        }
    }

    /// Started and stopped from a task (`listen()`, `close(grace:)`), as the gateway does:
    /// no thread waits on a semaphore. The close returns once the exchange in flight has
    /// been answered; a second server on the same live socket is refused and listens nowhere.
    @Test func aServerListensAndClosesFromATaskAfterTheExchangeInFlight() async throws {
        try await withScratch { dir in
            let path = dir + "/async.sock"
            let group = try EventLoopGroup(loopCount: 2)
            defer { group.shutdown() }
            let tasks = ResponderTasks()
            let arrivals = Arrivals()
            let server = HTTPServer(
                configuration: HTTPServerConfiguration(address: .unix(path: path, mode: 0o600)), group: group,
                responder: TestResponder(arrivals: arrivals, tasks: tasks))
            try await server.listen()
            let second = HTTPServer(
                configuration: HTTPServerConfiguration(address: .unix(path: path, mode: 0o600)), group: group,
                responder: TestResponder(arrivals: Arrivals(), tasks: ResponderTasks()))
            await #expect(throws: RuntimeError.self) { try await second.listen() }
            await second.close(grace: .zero)

            let client = try RawClient(unixPath: path, timeoutSeconds: 10)
            try client.send("GET /later HTTP/1.1\r\nHost: a\r\n\r\n")
            let answer = Task.detached { try client.readResponse() }
            #expect(await arrivals.wait(for: "/later"))
            await server.close(grace: .seconds(5))
            let response = try await answer.value
            #expect(response.status == 200 && response.text == "later", "answered before the close returned")
            #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed")
            tasks.waitUntilNoneRun(timeout: .seconds(5))
        }
    }

    @Test func aUnixSocketPeerIsCalledUnixAndATCPPeerByItsAddress() async throws {
        try await withScratch { dir in
            let path = dir + "/s.sock"
            try await TestServer.with(address: .unix(path: path, mode: 0o600)) { _ in
                let client = try RawClient(unixPath: path)
                try client.send("GET /peer HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try client.readResponse().text == "unix")
            }
            try await TestServer.with { server in
                let client = try RawClient(port: server.port)
                try client.send("GET /peer HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try client.readResponse().text.hasPrefix("127.0.0.1:"))
            }
        }
    }

    @Test(arguments: [UInt32(0o600), 0o660, 0o620])
    func theSocketFileHasTheConfiguredMode(_ mode: UInt32) async throws {
        try await withScratch { dir in
            let path = dir + "/m.sock"
            // Whatever the umask would have made of it.
            let old = umask(0o022)
            defer { umask(old) }
            try await TestServer.with(loops: 1, address: .unix(path: path, mode: mode)) { _ in
                var info = stat()
                #expect(lstat(path, &info) == 0)
                #expect(info.st_mode & S_IFMT == S_IFSOCK)
                #expect(info.st_mode & 0o7777 == mode)
            }
        }
    }

    @Test func theSocketFileIsRemovedAtShutdown() async throws {
        try await withScratch { dir in
            let path = dir + "/gone.sock"
            try await TestServer.with(loops: 2, address: .unix(path: path, mode: 0o600)) { _ in
                #expect(FileManager.default.fileExists(atPath: path))
            }
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(throws: RawClient.ClientError.self) { try RawClient(unixPath: path) }
        }
    }

    @Test func aStaleSocketFileLeftByACrashIsReplaced() async throws {
        try await withScratch { dir in
            let path = dir + "/stale.sock"
            // Bound and closed without unlink: what a killed process leaves.
            let fd = try UnixSockets.bound(path, listening: false)
            close(fd)
            #expect(UnixSockets.isSocket(path))
            try await TestServer.with(loops: 1, address: .unix(path: path, mode: 0o600)) { _ in
                let client = try RawClient(unixPath: path)
                try client.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try client.readResponse().status == 200)
            }
        }
    }

    @Test func aSocketSomeoneListensOnIsNeitherRemovedNorTaken() async throws {
        try await withScratch { dir in
            let path = dir + "/live.sock"
            let fd = try UnixSockets.bound(path, listening: true)
            defer { close(fd) }
            let error = await startFailure(path)
            #expect(error?.systemCode == -EADDRINUSE)
            #expect(error?.description.contains("another process is listening") == true)
            #expect(error?.description.contains(path) == true)
            // The other process keeps its socket.
            #expect(UnixSockets.isSocket(path))
            _ = try RawClient(unixPath: path)
        }
    }

    @Test func aFileThatIsNotASocketIsNeverRemoved() async throws {
        try await withScratch { dir in
            let path = dir + "/notes.txt"
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
            let error = await startFailure(path)
            #expect(error?.systemCode == -EEXIST)
            #expect(error?.description.contains("not a socket") == true)
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
            // Nor a directory.
            let sub = dir + "/sub"
            try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: false)
            #expect(await startFailure(sub)?.systemCode == -EEXIST)
            #expect(FileManager.default.fileExists(atPath: sub))
        }
    }

    @Test func aPathLongerThanSunPathIsRefusedNotTruncated() async throws {
        try await withScratch { dir in
            let long = dir + "/" + String(repeating: "a", count: ListenAddress.maxUnixPathBytes + 1 - dir.utf8.count - 1)
            #expect(long.utf8.count == ListenAddress.maxUnixPathBytes + 1)
            #expect(await startFailure(long)?.systemCode == -ENAMETOOLONG)
            // libuv 1.44 would have bound the path cut at 107 bytes.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
            let longest = String(long.dropLast())
            try await TestServer.with(loops: 1, address: .unix(path: longest, mode: 0o600)) { _ in
                #expect(UnixSockets.isSocket(longest))
            }
        }
    }

    @Test func theUpstreamClientReachesAServerOnAUnixSocket() async throws {
        try await withScratch { dir in
            let path = dir + "/c.sock"
            try await TestServer.with(loops: 1, address: .unix(path: path, mode: 0o600)) { _ in
                let loop = try EventLoop(name: "client-loop")
                loop.start()
                defer { loop.shutdown() }
                let client = await UpstreamClient.make(on: loop, configuration: UpstreamClientConfiguration(unixSocketPath: path))
                // The URL's host and port are not connected to: nothing listens on port 9.
                let r = try await client.send(
                    UpstreamRequest(method: "POST", url: "http://localhost:9/echo", body: .bytes(Array("over the socket".utf8))))
                #expect(r.status == 200)
                #expect(String(decoding: r.body, as: UTF8.self) == "over the socket")
                let peer = try await client.send(UpstreamRequest(method: "GET", url: "http://localhost/peer"))
                #expect(String(decoding: peer.body, as: UTF8.self) == "unix")
            }
        }
    }

    /// The error `HTTPServer.listen` throws for a socket at `path`, or nil when it started.
    func startFailure(_ path: String) async -> RuntimeError? {
        do {
            let s = try await TestServer(loops: 1, address: .unix(path: path, mode: 0o600))
            await s.stop()
            return nil
        } catch let error as RuntimeError {
            return error
        } catch {
            return nil
        }
    }
}

/// Raw Unix sockets, for what another process would leave at a path.
enum UnixSockets {
    static func bound(_ path: String, listening: Bool) throws -> Int32 {
        let fd = socket(AF_UNIX, streamSocketType, 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0, !listening || listen(fd, 8) == 0 else {
            close(fd)
            throw RawClient.ClientError.socket(errno)
        }
        return fd
    }

    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }
}
