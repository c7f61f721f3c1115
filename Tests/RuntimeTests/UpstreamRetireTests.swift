import Foundation
import HTTPWire
import Runtime
import TestSupport
import Testing

/// A retired upstream client (its settings were replaced by a reload) closes its connections
/// once idle, lets exchanges under way finish, and serves a late exchange by opening again;
/// counted by a real nginx's own connection count (`stub_status`).
@Suite(.serialized)
struct UpstreamRetireTests {
    static let configurations = [
        UpstreamClientConfiguration(loopHTTP1: true),  // the loop's own HTTP/1.1 client
        UpstreamClientConfiguration(loopHTTP1: false),  // libcurl
    ]

    static func nginx() throws -> Nginx {
        let nginx = try Nginx(
            serverBlock: """
                location = /status { stub_status; }
                location /slow { root \(FileManager.default.temporaryDirectory.path); limit_rate 64k; }
                location / { return 200 "$connection"; }
                """)
        return nginx
    }

    /// nginx's open client connections, asked on a connection of curl's own (counted too).
    static func active(_ port: Int) throws -> Int {
        let curl = Subprocess()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "http://127.0.0.1:\(port)/status"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        guard let line = text.split(separator: "\n").first, let n = line.split(separator: " ").last.flatMap({ Int($0) }) else {
            return -1
        }
        return n
    }

    static func onLoop<T: Sendable>(_ client: UpstreamClient, _ body: @escaping @Sendable (UpstreamClient) -> T) async -> T {
        await withCheckedContinuation { cont in client.loop.executeSoonOrNow { cont.resume(returning: body(client)) } }
    }

    /// Runs `body` with nginx and a client of `configuration`, on a loop of its own, that
    /// has served three requests to it (one connection kept alive).
    static func withServedClient(
        _ configuration: UpstreamClientConfiguration, _ body: (Nginx, EventLoop, UpstreamClient) async throws -> Void
    ) async throws {
        let nginx = try Self.nginx()
        defer { nginx.stop() }
        let loop = try EventLoop(name: "retire-loop")
        loop.start()
        defer { loop.shutdown() }
        let client = await UpstreamClient.make(on: loop, configuration: configuration)
        let url = "http://127.0.0.1:\(nginx.port)/"
        for _ in 0..<3 { #expect(try await client.send(UpstreamRequest(method: "GET", url: url)).status == 200) }
        try await body(nginx, loop, client)
    }

    @Test(arguments: configurations)
    func aRetiredClientClosesItsIdleConnectionsAndOpensAgainForALateExchange(_ configuration: UpstreamClientConfiguration)
        async throws
    {
        try await Self.withServedClient(configuration) { nginx, _, client in
            #expect(try Self.active(nginx.port) == 2, "one kept-alive connection, and curl's")
            await Self.onLoop(client) { $0.retire() }
            #expect(await eventually { (try? Self.active(nginx.port)) == 1 }, "the idle connection closed")
            #expect(await Self.onLoop(client) { $0.isClosed })
            let late = try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(nginx.port)/"))
            #expect(late.status == 200, "a late exchange is served")
            #expect(await eventually { (try? Self.active(nginx.port)) == 1 }, "and its connection closed after it")
        }
    }

    @Test(arguments: configurations)
    func anExchangeUnderWayWhenTheClientIsRetiredFinishes(_ configuration: UpstreamClientConfiguration) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("slow")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        let body = Data((0..<96 * 1024).map { UInt8(truncatingIfNeeded: $0) })
        try body.write(to: file.appendingPathComponent("body-\(configuration.loopHTTP1)"))
        let nginx = try Self.nginx()
        defer { nginx.stop() }
        let loop = try EventLoop(name: "retire-loop")
        loop.start()
        defer { loop.shutdown() }
        let client = await UpstreamClient.make(on: loop, configuration: configuration)
        let url = "http://127.0.0.1:\(nginx.port)/slow/body-\(configuration.loopHTTP1)"
        // Started and retired in one turn of the loop: the exchange is under way when retired.
        let (handler, stillOpen) = await Self.onLoop(client) { client -> (Collector, Bool) in
            let handler = Collector()
            client.start(UpstreamRequest(method: "GET", url: url), handler: handler)
            client.retire()
            return (handler, !client.isClosed)
        }
        #expect(stillOpen)
        let (status, received) = await handler.result()
        #expect(status == 200 && received == body)
        #expect(await eventually { await Self.onLoop(client) { $0.isClosed } }, "closed once the exchange ended")
        #expect(await eventually { (try? Self.active(nginx.port)) == 1 })
    }

    /// Closing a retired client closes each of its sockets once, and nothing else: a
    /// descriptor number freed meanwhile belongs to whoever opened it next (in the gateway,
    /// a client's connection accepted on the same loop), and must not be closed again.
    @Test(arguments: configurations)
    func closingARetiredClientClosesNoDescriptorItNoLongerOwns(_ configuration: UpstreamClientConfiguration) async throws {
        try await Self.withServedClient(configuration) { _, loop, client in
            // The client closes on the loop's next turn; the job queued after it runs in that
            // same turn and takes the lowest free descriptor numbers, as an accept would.
            let taken = await withCheckedContinuation { (cont: CheckedContinuation<[Int32], Never>) in
                loop.executeSoonOrNow {
                    client.retire()
                    loop.execute { cont.resume(returning: (0..<16).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }) }
                }
            }
            #expect(await eventually { await Self.onLoop(client) { $0.isClosed } })
            // Two more turns: the poll handles' close callbacks have run.
            await Self.onLoop(client) { _ in }
            await Self.onLoop(client) { _ in }
            for fd in taken {
                #expect(fcntl(fd, F_GETFD) != -1, "descriptor \(fd), opened after the client closed, was closed by it")
                close(fd)
            }
        }
    }
}

/// Collects one response, on the loop; `result()` waits for its end.
final class Collector: UpstreamResponseHandler, @unchecked Sendable {
    // @unchecked: the callbacks run on the client's loop; `done` is resumed once, after them.
    private var status = 0
    private var body = Data()
    private var done: CheckedContinuation<(Int, Data), Never>?
    private var finished: (Int, Data)?
    private let lock = NSLock()

    func upstreamHead(status: Int, headers: HTTPHeaders) { self.status = status }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        body.append(contentsOf: bytes)
        return true
    }

    func upstreamFinished(_ error: RuntimeError?) {
        let result = (error == nil ? status : -1, body)
        let waiter: CheckedContinuation<(Int, Data), Never>? = lock.withLock {
            finished = result
            return done
        }
        waiter?.resume(returning: result)
    }

    func result() async -> (Int, Data) {
        await withCheckedContinuation { cont in
            let ready: (Int, Data)? = lock.withLock {
                if finished == nil { done = cont }
                return finished
            }
            if let ready { cont.resume(returning: ready) }
        }
    }
}
