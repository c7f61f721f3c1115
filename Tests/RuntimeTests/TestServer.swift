import Foundation
import HTTPWire
import Locking
import TestSupport

@testable import Runtime

/// A server on an ephemeral port (or a Unix socket) with routes that exercise the runtime.
final class TestServer: Sendable {
    let group: EventLoopGroup
    let server: HTTPServer
    /// Requests that reached the responder, by path (streamed ones with their head).
    let arrivals = Arrivals()
    /// The responder's own tasks; `stop` waits for them before it stops the loops.
    let tasks = ResponderTasks()
    var port: Int { server.port }

    init(
        configuration: HTTPServerConfiguration = HTTPServerConfiguration(), loops: Int = 2,
        address: ListenAddress = .tcp(host: "127.0.0.1", port: 0)
    ) async throws {
        var c = configuration
        c.address = address
        group = try EventLoopGroup(loopCount: loops)
        server = HTTPServer(configuration: c, group: group, responder: TestResponder(arrivals: arrivals, tasks: tasks))
        try await server.listen()
    }

    /// Stops the server, lets the responder's tasks finish (a task that resumed on a loop
    /// already stopped would never run again), then stops the loops.
    func stop() async {
        await server.close(grace: .seconds(2))
        tasks.waitUntilNoneRun(timeout: .seconds(5))
        await group.close()
    }

    /// Runs `body` with a started server and always stops it.
    static func with<T>(
        _ configuration: HTTPServerConfiguration = HTTPServerConfiguration(), loops: Int = 2,
        address: ListenAddress = .tcp(host: "127.0.0.1", port: 0), _ body: (TestServer) async throws -> T
    ) async throws -> T {
        let s = try await TestServer(configuration: configuration, loops: loops, address: address)
        do {
            let r = try await body(s)
            await s.stop()
            return r
        } catch {
            await s.stop()
            throw error
        }
    }
}

/// Counts the requests a responder was handed, so tests wait for "it has arrived" instead of
/// sleeping.
final class Arrivals: Sendable {
    private let counts = Locked<[String: Int]>([:])

    func record(_ path: Substring) { counts.withLock { $0[String(path), default: 0] += 1 } }

    /// How many requests for `path` have arrived.
    func count(_ path: String) -> Int { counts.withLock { $0[path, default: 0] } }

    /// Waits (polling, up to `timeout`) until `count` requests for `path` have arrived.
    func wait(for path: String, count: Int = 1, timeout: Duration = .seconds(20)) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(5)) { self.count(path) >= count }
    }
}

/// Counts the tasks the test responder runs for its requests.
final class ResponderTasks: Sendable {
    private let running = Locked(0)

    /// Runs `body` in a task that prefers `loop`, counted until it returns.
    @discardableResult
    func spawn(on loop: EventLoop, _ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        running.withLock { $0 += 1 }
        return Task(executorPreference: loop) { [running] in
            await body()
            running.withLock { $0 -= 1 }
        }
    }

    /// Blocks (off the loops) until no task runs, or `timeout` has passed.
    func waitUntilNoneRun(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while running.withLock({ $0 }) > 0, ContinuousClock.now < deadline { usleep(2000) }
    }
}

struct TestResponder: HTTPResponder {
    let arrivals: Arrivals
    let tasks: ResponderTasks

    func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        head.path.hasPrefix("/stream") ? .stream : .buffer(maxBytes: limits.maxBufferedBodyBytes)
    }

    func respond(to request: HTTPRequest, writer: ResponseWriter) {
        let head = request.head
        arrivals.record(head.path)
        switch head.path {
        case "/echo":
            guard case .buffered(let body) = request.body else { return }
            var h = HTTPHeaders()
            h.add(name: "X-Method", value: head.method)
            h.add(name: "X-Target", value: head.target)
            writer.respond(status: 200, headers: h, body: body)
        case "/stream-echo":
            // Echo the body back chunked, as it arrives.
            guard case .stream(let stream) = request.body else { return }
            tasks.spawn(on: request.loop) {
                writer.writeHead(status: 200)
                do {
                    while let chunk = try await stream.next() { try await writer.writeBody(chunk) }
                    writer.end()
                } catch {}
            }
        case "/stream-slow":
            // Reads slowly: the server must stop reading from the client meanwhile.
            guard case .stream(let stream) = request.body else { return }
            tasks.spawn(on: request.loop) {
                var total = 0
                do {
                    while let chunk = try await stream.next() {
                        total += chunk.count
                        try await Task.sleep(for: .milliseconds(20))
                    }
                } catch {}
                writer.respond(status: 200, body: Array(String(total).utf8))
            }
        case "/stream-stall":
            // Takes one piece, stalls for 2 s, then reads the rest.
            guard case .stream(let stream) = request.body else { return }
            tasks.spawn(on: request.loop) {
                var total = 0
                do {
                    if let first = try await stream.next() { total += first.count }
                    try await Task.sleep(for: .seconds(2))
                    while let chunk = try await stream.next() { total += chunk.count }
                } catch {}
                writer.respond(status: 200, body: Array(String(total).utf8))
            }
        case "/big":
            // A large streamed response.
            let size = Int(head.headers[first: "x-size"] ?? "") ?? 1 << 20
            tasks.spawn(on: request.loop) {
                var h = HTTPHeaders()
                h.add(name: "Content-Length", value: String(size))
                writer.writeHead(status: 200, headers: h)
                var sent = 0
                let block = [UInt8](repeating: 0x61, count: 64 * 1024)
                do {
                    while sent < size {
                        let n = min(block.count, size - sent)
                        try await writer.writeBody(Array(block[0..<n]))
                        sent += n
                    }
                    writer.end()
                } catch {}
            }
        case "/later":
            let t = tasks.spawn(on: request.loop) {
                try? await Task.sleep(for: .milliseconds(50))
                writer.respond(status: 200, body: Array("later".utf8))
            }
            writer.onClientGone { t.cancel() }
        case "/peer":
            writer.respond(status: 200, body: Array(request.remoteAddress.utf8))
        case "/loop":
            writer.respond(status: 200, body: Array(request.loop.name.utf8))
        case "/hang":
            // Never answers.
            break
        case "/no-content":
            writer.respond(status: 204)
        default:
            writer.respond(status: 200, body: Array("ok".utf8))
        }
    }
}
