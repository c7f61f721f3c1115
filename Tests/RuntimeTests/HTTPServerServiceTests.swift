import Glibc
import HTTPWire
import Locking
import Logging
import Runtime
import ServiceLifecycle
import TestSupport
import Testing

/// `HTTPServer` as a swift-service-lifecycle `Service`, and the shutdowns that wait without
/// blocking a thread (`HTTPServer.close(grace:)`, `EventLoop.close()`).
@Suite struct HTTPServerServiceTests {
    /// Answers `/held` only once ``release()`` is called; everything else at once.
    final class HeldResponder: HTTPResponder, Sendable {
        private let held = Locked<[ResponseWriter]>([])

        var count: Int { held.withLock { $0.count } }

        func respond(to request: HTTPRequest, writer: ResponseWriter) {
            guard request.head.path == "/held" else { return writer.respond(status: 200, body: Array("now".utf8)) }
            held.withLock { $0.append(writer) }
        }

        func release() {
            for writer in held.withLock({ h in
                defer { h = [] }
                return h
            }) {
                writer.respond(status: 200, body: Array("held".utf8))
            }
        }
    }

    /// The server, telling the test its port once it listens.
    struct Announced: Service {
        let server: HTTPServer
        let port: Locked<Int>

        func run() async throws {
            try await server.run { address in
                if case .tcp(_, let p) = address { port.withLock { $0 = p } }
            }
        }
    }

    /// A server with a ``HeldResponder`` run by a service group, listening, with a request
    /// held in flight.
    struct Serving {
        let loops: EventLoopGroup
        let responder = HeldResponder()
        let server: HTTPServer
        let services: ServiceGroup
        let running: Task<Void, any Error>
        let port: Int
        let inFlight: Task<TestResponse, any Error>

        init(loops count: Int, grace: Duration) async throws {
            loops = try EventLoopGroup(loopCount: count)
            var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
            configuration.shutdownGrace = grace
            server = HTTPServer(configuration: configuration, group: loops, responder: responder)
            let bound = Locked(0)
            let services = ServiceGroup(
                configuration: .init(services: [Announced(server: server, port: bound)], logger: HTTPServerServiceTests.quiet))
            self.services = services
            running = Task { try await services.run() }
            #expect(await eventually { bound.withLock { $0 } != 0 }, "the server listens")
            let port = bound.withLock { $0 }
            self.port = port
            #expect(try await HTTPServerServiceTests.get(port, "/now").text == "now")
            inFlight = Task { try await HTTPServerServiceTests.get(port, "/held") }
            let responder = self.responder
            #expect(await eventually { responder.count == 1 }, "the held request arrived")
        }
    }

    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    static func get(_ port: Int, _ path: String) async throws -> TestResponse {
        try await onThread {
            let client = try RawClient(port: port)
            try client.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
            return try client.readResponse()
        }
    }

    static func listening(_ port: Int) async -> Bool {
        (try? await onThread { _ = try RawClient(port: port, timeoutSeconds: 1) }) != nil
    }

    @Test func aGracefulShutdownStopsAcceptingThenLetsTheResponseInFlightFinish() async throws {
        // A grace longer than any loaded run takes between the shutdown and the release below.
        let s = try await Serving(loops: 2, grace: .seconds(120))
        await s.services.triggerGracefulShutdown()
        #expect(await eventually { await !Self.listening(s.port) }, "the listener closed")
        #expect(s.server.activeConnections == 1, "the connection in flight is still open")
        s.responder.release()
        try await s.running.value
        let answer = try await s.inFlight.value
        #expect(answer.status == 200 && answer.text == "held", "the response in flight finished")
        #expect(s.server.activeConnections == 0)
        await s.loops.close()
    }

    @Test func cancellationClosesTheConnectionsInFlightAtOnce() async throws {
        let s = try await Serving(loops: 1, grace: .seconds(3600))
        s.running.cancel()
        _ = try? await s.running.value
        // Without the hour's grace: the held request's connection was closed unanswered.
        await #expect(throws: RawClient.ClientError.self) { try await s.inFlight.value }
        #expect(s.server.activeConnections == 0)
        #expect(await !Self.listening(s.port))
        await s.loops.close()
    }

    @Test func aServerThatCannotListenEndsItsRunWithTheListenersError() async throws {
        let loops = try EventLoopGroup(loopCount: 1)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "256.0.0.1", port: 0), group: loops, responder: HeldResponder())
        await #expect(throws: RuntimeError.self) { try await server.run() }
        await loops.close()
    }

    @Test func closeInACancelledTaskStillWaitsForTheConnectionsToClose() async throws {
        let loops = try EventLoopGroup(loopCount: 2)
        let responder = HeldResponder()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: loops, responder: responder)
        try await server.listen()
        let inFlight = Task { try? await Self.get(server.port, "/held") }
        #expect(await eventually { responder.count == 1 }, "the held request arrived")
        let closing = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await server.close(grace: .milliseconds(300))
            return server.activeConnections
        }
        #expect(await closing.value == 0, "close returned only once the held connection was closed")
        _ = await inFlight.value
        await loops.close()
    }

    @Test func closingALoopWaitsForTheJobsItAcceptedEvenInACancelledTask() async throws {
        let loop = try EventLoop(name: "closing")
        loop.start()
        let ran = Locked(false)
        loop.execute {
            // Holds the loop's thread, so the close below has to wait for it.
            usleep(300_000)
            ran.withLock { $0 = true }
        }
        let closing = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await loop.close()
            return ran.withLock { $0 }
        }
        #expect(await closing.value, "the job accepted before the close ran before it returned")
        await loop.close()  // a second close returns at once
        loop.execute {}
        #expect(loop.droppedJobs == 1, "a job after the close is dropped")
    }
}
