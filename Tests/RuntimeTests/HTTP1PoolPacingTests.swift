import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Runtime

/// A burst of exchanges to an origin with no idle connection opens connections at the pace
/// they are answered, over real sockets: never more than `maxConnectingPerHost` opened and
/// not yet answered at once, and still as many as the burst needs in the end.
@Suite(.serialized) struct HTTP1PoolPacingTests {
    /// The statuses of `count` exchanges sent at once to `port` through `client`.
    private static func burst(_ count: Int, to port: Int, through client: UpstreamClient) async throws -> [Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(port)/")).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
    }

    /// The pool's most unanswered connections at once, and its open connections.
    private static func counts(_ client: UpstreamClient, on loop: EventLoop) async -> (peak: Int, open: Int) {
        await withCheckedContinuation { (done: CheckedContinuation<(peak: Int, open: Int), Never>) in
            loop.execute {
                let pool = client.http1Pools.values.first
                done.resume(returning: (pool?.peakUnprovenCount ?? -1, pool?.openCount ?? -1))
            }
        }
    }

    /// Runs `body` with a loop-HTTP/1 client, on a loop of its own, that keeps at most
    /// `maxConnecting` connections unanswered (each for up to `window`); the loop stops after.
    private static func withPacedClient(
        maxConnecting: Int, window: Duration? = nil, totalTimeout: Duration? = nil,
        _ body: (UpstreamClient, EventLoop) async throws -> Void
    ) async throws {
        let loop = try EventLoop(name: "pacing-loop")
        loop.start()
        defer { loop.shutdown() }
        var configuration = UpstreamClientConfiguration(maxConnectionsPerHost: 64, loopHTTP1: true)
        configuration.maxConnectingPerHost = maxConnecting
        if let window { configuration.firstAnswerWindow = window }
        if let totalTimeout { configuration.totalTimeout = totalTimeout }
        try await body(await UpstreamClient.make(on: loop, configuration: configuration), loop)
    }

    @Test(arguments: [1, 4])
    func aBurstConnectsAFewAtATimeAndServesEveryExchange(maxConnecting: Int) async throws {
        // Answers after 50 ms and keeps the connection: a burst keeps every connection busy.
        let upstream = try CannedServer(
            response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", after: .serveNext, delay: .milliseconds(50))
        defer { upstream.stop() }
        try await Self.withPacedClient(maxConnecting: maxConnecting) { client, loop in
            let statuses = try await Self.burst(32, to: upstream.port, through: client)
            #expect(statuses.count == 32 && statuses.allSatisfy { $0 == 200 })
            let counts = await Self.counts(client, on: loop)
            #expect(
                counts.peak >= 1 && counts.peak <= maxConnecting, "at most \(maxConnecting) unanswered at once: \(counts.peak)")
            #expect(counts.open > maxConnecting, "more connections opened as the first answered: \(counts.open)")
        }
    }

    /// An upstream that completes every handshake at once but answers after 50 ms: a
    /// connect that completes proves nothing, so the server itself never holds more than
    /// `maxConnecting` connections it has not answered (paced by connects, it held nearly
    /// the whole burst), and every exchange is answered.
    @Test(arguments: [1, 2])
    func connectionsTheServerHasNotAnsweredStayWithinThePace(maxConnecting: Int) async throws {
        let upstream = try SlowAnswerServer(delay: .milliseconds(50))
        defer { upstream.stop() }
        // No window ends during the test: only first answers pace it.
        try await Self.withPacedClient(maxConnecting: maxConnecting, window: .seconds(60)) { client, loop in
            let statuses = try await Self.burst(32, to: upstream.port, through: client)
            #expect(statuses.count == 32 && statuses.allSatisfy { $0 == 200 })
            #expect(
                upstream.peakUnanswered >= 1 && upstream.peakUnanswered <= maxConnecting,
                "unanswered at the server: \(upstream.peakUnanswered)")
            #expect(upstream.accepted > maxConnecting, "more opened as the first answered: \(upstream.accepted)")
            let counts = await Self.counts(client, on: loop)
            #expect(counts.peak <= maxConnecting && counts.open == upstream.accepted)
        }
    }

    /// An upstream that answers nothing until it holds four connections (as a long poll
    /// answers late): each connection stops counting when its window ends, so the pace opens
    /// the ones the server waits for rather than stalling the origin until a timeout.
    @Test func aConnectionSlowToAnswerStopsCountingWhenItsWindowEnds() async throws {
        let upstream = try SlowAnswerServer(delay: .zero, holdUntil: 4)
        defer { upstream.stop() }
        // A stall fails the exchanges (and the test) rather than hanging it.
        try await Self.withPacedClient(maxConnecting: 1, window: .milliseconds(20), totalTimeout: .seconds(10)) { client, _ in
            let statuses = try await Self.burst(6, to: upstream.port, through: client)
            #expect(statuses.count == 6 && statuses.allSatisfy { $0 == 200 })
            #expect(upstream.accepted >= 4, "windows ended and let more connections open: \(upstream.accepted)")
        }
    }
}
