import Foundation
import Gateway
import HTTPWire
import Runtime
import Synchronization
import TestSupport
import Testing

/// A proxy on its own loops in front of `routes`.
final class Proxy: Sendable {
    let group: EventLoopGroup
    let server: HTTPServer
    var port: Int { server.port }

    init(routes: [ProxyRoute], client: UpstreamClientConfiguration = UpstreamClientConfiguration(), loops: Int = 2)
        async throws
    {
        group = try EventLoopGroup(loopCount: loops, name: "proxy")
        server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: group,
            responder: ReverseProxy(routes: routes, clientConfiguration: client))
        try await server.listen()
    }

    /// Stops the loops, which close the listener and every connection at once.
    func stop() {
        group.shutdown()
    }
}

func withProxy(
    client: UpstreamClientConfiguration = UpstreamClientConfiguration(), stripPrefix: Bool = false,
    _ body: (Proxy, Upstream) async throws -> Void
) async throws {
    let upstream = try await Upstream()
    defer { upstream.stop() }
    let proxy = try await Proxy(
        routes: [
            ProxyRoute(prefix: "/api", upstream: UpstreamOrigin(upstream.url)!, upstreamPath: "/v1", stripPrefix: true),
            ProxyRoute(prefix: "/", upstream: UpstreamOrigin(upstream.url)!),
        ], client: client)
    defer { proxy.stop() }
    try await body(proxy, upstream)
}

@Suite(.serialized) struct ProxyTests {
    @Test func pathQueryAndPrefixMappingArePreserved() async throws {
        try await withProxy { proxy, upstream in
            let c = try RawClient(port: proxy.port)
            try c.send("GET /api/users/inspect?a=1&b=%20 HTTP/1.1\r\nHost: client.example\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.status == 200)
            #expect(r.text.hasPrefix("GET /v1/users/inspect?a=1&b=%20\n"))
            #expect(r.text.contains("Host: 127.0.0.1:\(upstream.port)"))
            #expect(r.text.contains("X-Forwarded-Host: client.example"))
            #expect(r.text.contains("X-Forwarded-Proto: http"))
            #expect(r.text.contains("X-Forwarded-For: 127.0.0.1"))
            #expect(r.text.contains("Via: 1.1 authgate"))
            #expect(r.header("via") == "1.1 authgate")
        }
    }

    /// The route's parsed origin and the target made per request: the prefix stripped, the
    /// base path added, percent-encoded bytes and the query (even an empty one) as sent.
    @Test func encodedPathsAndQueriesReachTheUpstreamAsSent() async throws {
        try await withProxy { proxy, _ in
            let cases = [
                ("/api/a%20b/%C3%A9/inspect?x=%2F&y=%20#frag", "/v1/a%20b/%C3%A9/inspect?x=%2F&y=%20"),
                ("/api/inspect?", "/v1/inspect?"), ("/inspect?a=1?b", "/inspect?a=1?b"), ("/apix/inspect", "/apix/inspect"),
                ("http://evil.example/api/inspect?q", "/v1/inspect?q"),
            ]
            for (sent, received) in cases {
                let c = try RawClient(port: proxy.port)
                try c.send("GET \(sent) HTTP/1.1\r\nHost: a\r\n\r\n")
                let r = try c.readResponse()
                #expect(r.status == 200, "\(sent)")
                #expect(r.text.hasPrefix("GET \(received)\n"), "\(sent): \(r.text.prefix(80))")
            }
        }
    }

    @Test func absoluteFormTargetAndForeignHostNeverChangeTheDestination() async throws {
        try await withProxy { proxy, upstream in
            let c = try RawClient(port: proxy.port)
            try c.send("GET http://evil.example:9/inspect?x=1 HTTP/1.1\r\nHost: evil.example\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.status == 200)
            #expect(r.text.hasPrefix("GET /inspect?x=1\n"))
            #expect(r.text.contains("Host: 127.0.0.1:\(upstream.port)"))
        }
    }

    @Test func dotSegmentsAreRefused() async throws {
        try await withProxy { proxy, _ in
            for path in ["/api/../admin", "/api/%2e%2e/admin", "/a/./b"] {
                let c = try RawClient(port: proxy.port)
                try c.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try c.readResponse().status == 400, "\(path)")
            }
        }
    }

    @Test func hopByHopHeadersAreStrippedBothWays() async throws {
        try await withProxy { proxy, _ in
            let c = try RawClient(port: proxy.port)
            try c.send(
                "GET /inspect HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Private\r\nX-Private: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: h2c\r\nProxy-Authorization: Basic eA==\r\nX-Public: 2\r\n\r\n"
            )
            let r = try c.readResponse()
            for banned in ["X-Private", "Keep-Alive", "TE:", "Upgrade", "Proxy-Authorization", "Connection"] {
                #expect(!r.text.contains(banned), "\(banned) was forwarded")
            }
            #expect(r.text.contains("X-Public: 2"))
            let c2 = try RawClient(port: proxy.port)
            try c2.send("GET /hop HTTP/1.1\r\nHost: a\r\n\r\n")
            let r2 = try c2.readResponse()
            #expect(r2.header("keep-alive") == nil)
            #expect(r2.header("x-kept") == "yes")
        }
    }

    @Test func redirectsAreNeverFollowed() async throws {
        try await withProxy { proxy, _ in
            let c = try RawClient(port: proxy.port)
            try c.send("GET /redirect HTTP/1.1\r\nHost: a\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.status == 302)
            #expect(r.header("location") == "/elsewhere")
            #expect(r.text == "moved")
        }
    }

    @Test func bodiesAreForwardedChunkedAndByLength() async throws {
        try await withProxy { proxy, _ in
            let port = proxy.port
            // On its own thread: the pauses between pieces stay pauses, whatever holds the pool.
            let texts = try await onThread { () -> [String] in
                let c = try RawClient(port: port)
                try c.send("POST /inspect HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
                let byLength = try c.readResponse().text
                try c.send(
                    "POST /inspect HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                let chunked = try c.readResponse().text
                // A chunked body that arrives in pieces, with pauses between them.
                try c.send("POST /inspect HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
                for piece in ["4\r\nwxyz\r\n", "1\r\n!\r\n", "0\r\n\r\n"] {
                    Thread.sleep(forTimeInterval: 0.03)
                    try c.send(piece)
                }
                return [byLength, chunked, try c.readResponse().text]
            }
            #expect(texts[0].contains("body: hello"))
            #expect(texts[1].contains("body: abcde"))
            #expect(texts[2].contains("body: wxyz!"))
        }
    }

    /// An upstream that refused the connection is counted once, by its kind, beside the
    /// request's 5xx: the exchange itself counts it when it ends.
    @Test func aRefusedUpstreamIsCountedByItsKind() async throws {
        let metrics = GatewayMetrics(sessions: [])
        let group = try EventLoopGroup(loopCount: 1, name: "proxy")
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: group,
            responder: ReverseProxy(
                routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:1")!)], metrics: metrics))
        try await server.listen()
        defer { group.shutdown() }
        let c = try RawClient(port: server.port)
        try c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try c.readResponse().status == 502)
        var text = ""
        let counted = await eventually {
            text = metrics.render(sessions: [], process: .init())
            return text.contains(#"authgate_requests_total{route_kind="public",status_class="5xx"} 1"#)
        }
        #expect(counted, "\(text)")
        #expect(text.contains(#"authgate_upstream_failures_total{kind="upstream-connect-failed"} 1"#), "\(text)")
        #expect(text.contains(#"authgate_upstream_failures_total{kind="upstream-timeout"} 0"#), "\(text)")
    }

    @Test func refusedUpstreamGives502AndSlowUpstreamGives504() async throws {
        let dead = try await Proxy(routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:1")!)])
        defer { dead.stop() }
        let c = try RawClient(port: dead.port)
        try c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 502)
        #expect(r.header("content-type") == "application/problem+json")
        #expect(r.text.contains("upstream-connect-failed"))

        var cfg = UpstreamClientConfiguration()
        // Long enough for a loaded run to connect and deliver the request before it ends.
        cfg.totalTimeout = .seconds(5)
        try await withProxy(client: cfg) { proxy, upstream in
            // /hang never answers: the timeout is the only way out, however slow the machine.
            let c = try RawClient(port: proxy.port, timeoutSeconds: 60)
            try c.send("GET /hang HTTP/1.1\r\nHost: a\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.status == 504)
            #expect(r.text.contains("upstream-timeout"))
            #expect(
                await eventually { upstream.responder.arrivals("/hang") == 1 },
                "the request reached the upstream before timing out")
        }
    }

    @Test func upstreamDyingMidResponseTruncatesTheClientResponse() async throws {
        try await withProxy { proxy, _ in
            let c = try RawClient(port: proxy.port)
            try c.send("GET /die HTTP/1.1\r\nHost: a\r\n\r\n")
            let raw = String(decoding: c.readToEnd(), as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 200"))
            #expect(raw.hasSuffix("0123456789"), "the client got what was sent, then the close")
        }
    }

    @Test func clientDisconnectCancelsTheUpstreamExchange() async throws {
        try await withProxy { proxy, upstream in
            do {
                let c = try RawClient(port: proxy.port)
                try c.send("GET /hang HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(await eventually { upstream.responder.arrivals("/hang") == 1 }, "the exchange reached the upstream")
            }  // the client closes here
            #expect(await eventually { upstream.responder.cancelledExchanges.load(ordering: .relaxed) == 1 })
            #expect(upstream.responder.cancelledExchanges.load(ordering: .relaxed) == 1, "cancelled once")
        }
    }

    @Test func oneThousandConcurrentProxiedRequests() async throws {
        try await withProxy { proxy, _ in
            let port = proxy.port
            let ok = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<1000 {
                    group.addTask {
                        let c = try RawClient(port: port, timeoutSeconds: 30)
                        try c.send("POST /inspect HTTP/1.1\r\nHost: a\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)")
                        return try c.readResponse().text.hasSuffix("body: \(i)") ? 1 : 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(ok == 1000)
        }
    }

    @Test func socketChurnAgainstAnUpstreamThatClosesEveryConnection() async throws {
        try await withProxy { proxy, _ in
            let c = try RawClient(port: proxy.port)
            for _ in 0..<500 {
                try c.send("GET /close HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try c.readResponse().text == "closing")
            }
        }
    }

    @Test func hundredMebibytesEachWayWithBoundedMemory() async throws {
        // Under ASan/TSan the run is several times slower and shadow memory inflates RSS:
        // stream 16 MiB and skip the RSS bound there.
        let sanitized = runsUnderSanitizer
        var unlimited = UpstreamClientConfiguration()
        unlimited.totalTimeout = nil
        try await withProxy(client: unlimited) { proxy, upstream in
            let size = (sanitized ? 16 : 100) * 1024 * 1024
            let before = residentBytes()
            let peak = Atomic<Int>(before)
            let sampling = Task {
                while !Task.isCancelled {
                    let now = residentBytes()
                    if now > peak.load(ordering: .relaxed) { peak.store(now, ordering: .relaxed) }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            // Upload: 100 MiB streamed through the proxy into a counting sink.
            let up = try RawClient(port: proxy.port, timeoutSeconds: 60)
            try up.send("POST /sink HTTP/1.1\r\nHost: a\r\nContent-Length: \(size)\r\n\r\n")
            let block = [UInt8](repeating: 0x62, count: 256 * 1024)
            for _ in 0..<(size / block.count) { try up.send(block) }
            #expect(try up.readResponse().text == String(size))
            #expect(upstream.responder.bytesReceived.load(ordering: .relaxed) == size)
            // Download: 100 MiB streamed from the upstream through the proxy, read in pieces.
            let down = try RawClient(port: proxy.port, timeoutSeconds: 60)
            try down.send("GET /big HTTP/1.1\r\nHost: a\r\nX-Size: \(size)\r\nConnection: close\r\n\r\n")
            let received = down.countToEnd()
            sampling.cancel()
            #expect(received > size)
            let growth = peak.load(ordering: .relaxed) - before
            print("proxy \(size >> 20) MiB each way: peak RSS growth \(growth / 1024 / 1024) MiB")
            if !sanitized {
                #expect(growth < 48 * 1024 * 1024, "RSS grew by \(growth / 1024 / 1024) MiB")
            }
        }
    }
}

extension RawClient {
    /// Reads until the peer closes and returns only the number of bytes.
    func countToEnd() -> Int {
        var n = 0
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let r = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if r <= 0 { break }
            n += r
        }
        return n
    }
}
