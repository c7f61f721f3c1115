import Foundation
import Gateway
import Runtime
import TestSupport
import Testing

/// Upstream answers framed so that a lenient reader would take part of one for the next
/// (RFC 9112 §6.3), or wait for a body that never comes (RFC 9110 §6.4.1), through the proxy.
@Suite(.serialized) struct UpstreamFramingProxyTests {
    private static func withCannedUpstream(
        _ response: String, holdOpen: Bool = false, loopHTTP1: Bool = true, _ body: (Proxy) async throws -> Void
    ) async throws {
        let canned = try CannedServer(response: response, holdOpen: holdOpen)
        defer { canned.stop() }
        let proxy = try await Proxy(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:\(canned.port)")!)],
            client: UpstreamClientConfiguration(loopHTTP1: loopHTTP1))
        defer { proxy.stop() }
        try await body(proxy)
    }

    /// `Transfer-Encoding: identity` beside a length: the client gets 502, and nothing the
    /// upstream sent after its head reaches it as the answer to its next request.
    /// On the loop's own client and on libcurl (which serves `https://` upstreams).
    @Test(arguments: [true, false])
    func anUpstreamCannotSmuggleAResponseForTheClientsNextRequest(loopHTTP1: Bool) async throws {
        let injected =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n"
            + "helloHTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Injected: yes\r\n\r\nINJECTED"
        try await Self.withCannedUpstream(injected, loopHTTP1: loopHTTP1) { proxy in
            let c = try RawClient(port: proxy.port)
            try c.send("GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            let raw = c.readToEnd()
            let text = String(decoding: raw, as: UTF8.self)
            guard let (first, _) = TestResponse.parse(raw) else {
                Issue.record("no response: \(text.prefix(200))")
                return
            }
            #expect(first.status == 502)
            #expect(first.header("content-type") == "application/problem+json")
            #expect(!text.contains("INJECTED") && !text.contains("X-Injected"), "\(text)")
        }
    }

    /// Every framing a proxy would have to guess at, and every field that is not valid HTTP,
    /// is a 502 on both engines, and the client sees nothing of what followed the upstream's
    /// head.
    @Test(arguments: [true, false])
    func framingFieldsToGuessAtAreA502OnBothEngines(loopHTTP1: Bool) async throws {
        for fields in [
            "Transfer-Encoding: chunked\r\nContent-Length: 5", "Transfer-Encoding: gzip, chunked", "Transfer-Encoding: identity",
            "Content-Length: 5\r\nContent-Length: 6", "Transfer-Encoding: chunked\u{01}\r\nContent-Length: 5",
            // Not framing, but a field a proxy would have to drop to pass the rest on.
            "X-Ctl: a\u{01}b\r\nContent-Length: 5", "Bad Name: x\r\nContent-Length: 5",
        ] {
            let response =
                "HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nX-Injected: yes\r\nContent-Length: 0\r\n\r\n"
            try await Self.withCannedUpstream(response, loopHTTP1: loopHTTP1) { proxy in
                let c = try RawClient(port: proxy.port)
                try c.send("GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                let text = String(decoding: c.readToEnd(), as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 502"), "\(fields.debugDescription): \(text)")
                #expect(!text.contains("X-Injected") && !text.contains("hello"), "\(fields.debugDescription): \(text)")
            }
        }
    }

    /// A `304` with a length ends at its head; the client gets the length (that of what a
    /// `GET` would get) and no body, at once.
    @Test(arguments: [true, false])
    func aNotModifiedWithALengthIsAnsweredAtOnce(loopHTTP1: Bool) async throws {
        try await Self.withCannedUpstream(
            "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 10\r\n\r\n", holdOpen: true, loopHTTP1: loopHTTP1
        ) { proxy in
            let c = try RawClient(port: proxy.port)
            // The second request on the connection is answered only once the first exchange
            // is over, at the proxy and at the upstream.
            for path in ["/a", "/b"] {
                try c.send("GET \(path) HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"v1\"\r\n\r\n")
                let r = try c.readResponse()
                #expect(r.status == 304, "\(path)")
                #expect(r.header("etag") == "\"v1\"", "\(path)")
                #expect(r.body.isEmpty, "\(path)")
            }
        }
    }

    /// A `204` that announces a body (which it must not) ends at its head, and the client is
    /// not told of a length.
    @Test(arguments: [true, false])
    func aNoContentWithALengthIsAnsweredAtOnceWithoutIt(loopHTTP1: Bool) async throws {
        try await Self.withCannedUpstream(
            "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", holdOpen: true, loopHTTP1: loopHTTP1
        ) {
            proxy in
            let c = try RawClient(port: proxy.port)
            for path in ["/a", "/b"] {
                try c.send("DELETE \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
                let r = try c.readResponse()
                #expect(r.status == 204, "\(path)")
                #expect(r.header("content-length") == nil, "\(path)")
            }
        }
    }
}

/// An upstream connection whose answer ends while the request body is still going out is
/// closed, never left busy: with one connection per origin, the next request gets a new one.
@Suite(.serialized) struct EarlyAnswerProxyTests {
    @Test func anAnswerBeforeTheUploadEndsFreesTheUpstreamConnection() async throws {
        let canned = try CannedServer(
            response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", after: .stall, delay: .milliseconds(1500))
        defer { canned.stop() }
        var client = UpstreamClientConfiguration()
        client.maxConnectionsPerHost = 1
        let metrics = GatewayMetrics()
        client.connectionGauges = metrics.upstreamConnections
        // One loop: both requests meet the same upstream client and its one connection.
        let proxy = try await Proxy(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:\(canned.port)")!)], client: client,
            loops: 1)
        defer { proxy.stop() }

        // 48 MiB in 1 MiB chunks, more than the kernel's buffers on both sides hold: the body
        // pump waits on a full write queue when the answer arrives.
        let upload = try RawClient(port: proxy.port, timeoutSeconds: 180)
        try upload.send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        // Sent from another thread on the same socket while this one reads the answer.
        let fd = upload.fd
        let uploading = Thread {
            let chunk = Array("100000\r\n".utf8) + [UInt8](repeating: 0x61, count: 1 << 20) + Array("\r\n".utf8)
            for _ in 0..<48 {
                var off = 0
                while off < chunk.count {
                    let n = chunk[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { return }
                    off += n
                }
            }
        }
        uploading.start()
        let answer = try upload.readResponse()
        #expect(answer.status == 200 && answer.text == "ok")

        let next = try RawClient(port: proxy.port, timeoutSeconds: 180)
        try next.send("GET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        let r = try next.readResponse()
        #expect(r.status == 200 && r.text == "ok", "the only upstream connection was freed")
        // Neither exchange leaves a busy connection behind.
        let origin = "http://127.0.0.1:\(canned.port)"
        #expect(await eventually { metrics.upstreamConnections.snapshot().first { $0.origin == origin }?.busy == 0 })
        let text = metrics.render(sessions: [], process: .init())
        #expect(text.contains("authgate_upstream_connections{origin=\"\(origin)\",state=\"busy\"} 0"), "\(text)")
        #expect(text.contains("# HELP authgate_upstream_connections "))
    }

    /// The gauge follows a connection through its life: busy while it serves, idle in the
    /// pool after, gone once closed.
    @Test func theUpstreamConnectionGaugeFollowsBusyIdleAndClosed() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let gauges = UpstreamConnectionGauges()
        var client = UpstreamClientConfiguration()
        client.connectionGauges = gauges
        let proxy = try await Proxy(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin(upstream.url)!)], client: client, loops: 1)
        let origin = upstream.url
        let held = try RawClient(port: proxy.port, timeoutSeconds: 180)
        try held.send("GET /held HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await eventually { upstream.responder.arrivals("/held") == 1 })
        #expect(gauges.snapshot().first { $0.origin == origin }.map { ($0.busy, $0.idle) } ?? (-1, -1) == (1, 0))
        upstream.responder.releaseHeld()
        #expect(try held.readResponse().status == 200)
        #expect(
            await eventually { gauges.snapshot().first { $0.origin == origin }.map { ($0.busy, $0.idle) } ?? (-1, -1) == (0, 1) })
        proxy.stop()
        #expect(
            await eventually { gauges.snapshot().first { $0.origin == origin }.map { ($0.busy, $0.idle) } ?? (-1, -1) == (0, 0) })
    }
}
