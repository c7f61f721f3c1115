import Foundation
import Glibc
import HTTPWire
import Runtime
import TestSupport
import Testing

/// The loop's own HTTP/1.1 client against a real nginx (which names its connection in
/// each answer, `$connection`) and a server that drops a kept-alive connection unasked.
@Suite(.serialized)
struct HTTP1PoolTests {
    func withClient(
        _ config: UpstreamClientConfiguration = UpstreamClientConfiguration(loopHTTP1: true),
        _ body: (UpstreamClient) async throws -> Void
    ) async throws {
        let loop = try EventLoop(name: "pool-loop")
        loop.start()
        defer { loop.shutdown() }
        try await body(await UpstreamClient.make(on: loop, configuration: config))
    }

    func connection(_ client: UpstreamClient, _ port: Int) async throws -> String {
        let r = try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(port)/"))
        #expect(r.status == 200)
        return String(decoding: r.body, as: UTF8.self)
    }

    @Test func sequentialExchangesShareOneKeptAliveConnection() async throws {
        let nginx = try Nginx(serverBlock: #"location / { return 200 "$connection"; }"#)
        defer { nginx.stop() }
        try await withClient { client in
            var seen: [String] = []
            for _ in 0..<5 { seen.append(try await connection(client, nginx.port)) }
            #expect(Set(seen).count == 1, "\(seen)")
        }
    }

    @Test func aConnectionThePeerEndsIsReplacedWithoutAnError() async throws {
        // nginx closes after two requests (Connection: close). The idle timeout is long, so
        // a test held up between two exchanges still sees only the count close them.
        let nginx = try Nginx(
            serverBlock: #"keepalive_requests 2; keepalive_timeout 60s; location / { return 200 "$connection"; }"#)
        defer { nginx.stop() }
        try await withClient { client in
            var seen: [String] = []
            for _ in 0..<5 { seen.append(try await connection(client, nginx.port)) }
            #expect(seen[0] == seen[1] && seen[1] != seen[2] && seen[2] == seen[3] && seen[3] != seen[4], "\(seen)")
        }
    }

    @Test func anIdleConnectionThePeerClosedIsNotReused() async throws {
        // nginx closes a kept-alive connection after 1 s idle, without a word.
        let nginx = try Nginx(
            serverBlock: #"keepalive_timeout 1s; location / { return 200 "$connection"; }"#)
        defer { nginx.stop() }
        try await withClient { client in
            let before = try await connection(client, nginx.port)
            // Well past nginx's second: a loaded nginx closes it late.
            try await Task.sleep(for: .seconds(4))
            let after = try await connection(client, nginx.port)
            #expect(after != before, "the idle connection nginx closed is not reused")
        }
    }

    @Test func noMoreConnectionsThanTheLimitAndEveryExchangeIsServed() async throws {
        let nginx = try Nginx(serverBlock: #"location / { return 200 "$connection"; }"#)
        defer { nginx.stop() }
        try await withClient(UpstreamClientConfiguration(maxConnectionsPerHost: 2, loopHTTP1: true)) { client in
            let seen = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<40 { group.addTask { try await connection(client, nginx.port) } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(!seen.isEmpty && seen.count <= 2, "\(seen)")
        }
    }

    /// A handler that refuses the body until resumed, and the response's end held meanwhile:
    /// the connection goes back to the pool reading again, so the next exchange on it is
    /// answered (and a peer closing it while idle is noticed).
    @Test(.timeLimit(.minutes(1))) func aConnectionWhoseDeliveryPausedIsReadAgainWhenReused() async throws {
        // Idle timeouts on both sides no loaded run reaches between the two exchanges.
        let nginx = try Nginx(serverBlock: #"keepalive_timeout 300s; location / { return 200 "$connection"; }"#)
        defer { nginx.stop() }
        let loop = try EventLoop(name: "pool-loop")
        loop.start()
        defer { loop.shutdown() }
        let client = await UpstreamClient.make(
            on: loop, configuration: UpstreamClientConfiguration(idleTimeout: .seconds(120), loopHTTP1: true))
        let url = "http://127.0.0.1:\(nginx.port)/"
        let first: String = try await withCheckedThrowingContinuation { cont in
            loop.execute {
                let handler = RefusingOnceHandler(loop: loop) { cont.resume(with: $0) }
                handler.transfer = client.start(UpstreamRequest(method: "GET", url: url), handler: handler)
            }
        }
        let second = try await client.send(UpstreamRequest(method: "GET", url: url))
        #expect(second.status == 200)
        #expect(String(decoding: second.body, as: UTF8.self) == first, "the same kept-alive connection answered")
    }

    @Test func aRequestOnAConnectionThePeerJustClosedIsSentAgainOnANewOne() async throws {
        let server = try DroppingServer()
        defer { server.stop() }
        try await withClient { client in
            let first = try await connection(client, server.port)
            // The server reads the second request on that connection and closes it.
            let second = try await connection(client, server.port)
            #expect(first == "1" && second == "1", "answered on a new connection")
            #expect(server.accepted == 2)
        }
    }
}

/// Answers the first request on each connection ("1", kept alive), then reads the next
/// one and closes the connection without an answer: the race a pooled client meets when
/// a server ends an idle connection just as a request goes out.
final class DroppingServer: @unchecked Sendable {
    // @unchecked: `fd` never changes; `count` is guarded by `lock`.
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var count = 0

    var accepted: Int { lock.withLock { count } }

    init() throws {
        (fd, port) = try loopbackListener()
        Thread.detachNewThread { [self] in serve() }
    }

    private func readHead(_ c: Int32) -> Bool {
        var seen: [UInt8] = []
        var byte: UInt8 = 0
        while !seen.suffix(4).elementsEqual([13, 10, 13, 10]) {
            if recv(c, &byte, 1, 0) <= 0 { return false }
            seen.append(byte)
        }
        return true
    }

    private func serve() {
        acceptEach(fd) { c in
            lock.withLock { count += 1 }
            if readHead(c) {
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1".utf8)
                _ = answer.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                _ = readHead(c)
            }
            Glibc.close(c)
        }
    }

    func stop() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// Refuses the first body bytes, resumes the transfer on the next loop turn, and reports
/// the body once the exchange ends.
final class RefusingOnceHandler: UpstreamResponseHandler {
    let loop: EventLoop
    var transfer: (any UpstreamTransfer)?
    private var refused = false
    private var body: [UInt8] = []
    private let done: (Result<String, any Error>) -> Void

    init(loop: EventLoop, done: @escaping (Result<String, any Error>) -> Void) {
        self.loop = loop
        self.done = done
    }

    func upstreamHead(status: Int, headers: consuming HTTPHeaders) {}

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard refused else {
            refused = true
            let bound = LoopBound(self, loop: loop)
            loop.execute { bound.value.transfer?.resume() }
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    func upstreamFinished(_ error: RuntimeError?) {
        if let error { done(.failure(error)) } else { done(.success(String(decoding: body, as: UTF8.self))) }
    }
}
