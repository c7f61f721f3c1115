import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Runtime

/// A burst of exchanges to an origin with no idle connection opens connections at the pace
/// they connect, over real sockets: never more than `maxConnectingPerHost` connecting at
/// once, and still as many as the burst needs in the end.
@Suite(.serialized) struct HTTP1PoolPacingTests {
    @Test(arguments: [1, 4])
    func aBurstConnectsAFewAtATimeAndServesEveryExchange(maxConnecting: Int) async throws {
        // Answers after 50 ms and keeps the connection: a burst keeps every connection busy.
        let upstream = try CannedServer(
            response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", after: .serveNext, delay: .milliseconds(50))
        defer { upstream.stop() }
        let loop = try EventLoop(name: "pacing-loop")
        loop.start()
        defer { loop.shutdown() }
        var configuration = UpstreamClientConfiguration(maxConnectionsPerHost: 64, loopHTTP1: true)
        configuration.maxConnectingPerHost = maxConnecting
        let client = try await UpstreamClient.make(on: loop, configuration: configuration)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(upstream.port)/")).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 32 && statuses.allSatisfy { $0 == 200 })
        let counts = await withCheckedContinuation { (done: CheckedContinuation<(Int, Int), Never>) in
            loop.execute {
                let pool = client.http1Pools.values.first
                done.resume(returning: (pool?.peakConnectingCount ?? -1, pool?.openCount ?? -1))
            }
        }
        #expect(counts.0 >= 1 && counts.0 <= maxConnecting, "at most \(maxConnecting) connecting at once: \(counts.0)")
        #expect(counts.1 > maxConnecting, "more connections opened as the first connected: \(counts.1)")
    }
}
