import Foundation
import Gateway
import HTTPWire
import Runtime
import TestSupport
import Testing

/// A public route that opted into its origin's adaptive limit, over real sockets: a request
/// that finds the limit full waits for its slot and goes once one is free, or is answered
/// 503 when none comes in time; neither adds to the authenticated requests' phases.
@Suite struct PublicRouteLimitTests {
    /// A proxy with one public route to `upstream`, bounded by the origin's adaptive limit
    /// (one exchange at a time until it has learnt more).
    static func withBoundedProxy(
        _ upstream: Upstream, queueTimeout: Duration, _ body: (ReverseProxy, GatewayMetrics, Int) async throws -> Void
    ) async throws {
        let metrics = GatewayMetrics(sessions: [])
        let proxy = ReverseProxy(
            routes: [
                ProxyRoute(
                    prefix: "/", upstream: UpstreamOrigin(upstream.url)!, queueTimeout: queueTimeout, adaptiveLimit: true)
            ], metrics: metrics)
        let group = try EventLoopGroup(loopCount: 1, name: "proxy")
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: group, responder: proxy)
        try await server.listen()
        defer { group.shutdown() }
        try await body(proxy, metrics, server.port)
    }

    /// Sends `GET path` on a connection of its own, on a thread of its own (a blocking client
    /// on the cooperative pool would starve the limiter's timers), and returns the answer.
    static func get(_ path: String, port: Int) async throws -> TestResponse {
        try await onThread {
            let c = try RawClient(port: port)
            try c.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
            return try c.readResponse()
        }
    }

    @Test func aPublicRequestWaitsForItsSlotAndGoesWhenOneIsFree() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        try await Self.withBoundedProxy(upstream, queueTimeout: .seconds(3600)) { proxy, metrics, port in
            let first = Task { try await Self.get("/held", port: port) }
            #expect(await eventually { upstream.responder.arrivals("/held") == 1 })
            let second = Task { try await Self.get("/waiting", port: port) }
            #expect(await eventually { proxy.upstreamQueueWaiting == 1 }, "the second request waits for the slot")
            #expect(upstream.responder.arrivals("/waiting") == 0)
            upstream.responder.releaseHeld()
            let held = try await first.value
            #expect(held.status == 200)
            // Sent once the first's slot came back, with the request it kept while it waited.
            let waited = try await second.value
            #expect(waited.status == 200)
            #expect(upstream.responder.arrivals("/waiting") == 1)
            #expect(proxy.upstreamQueueWaiting == 0)
            // Counted once each has ended, which is just after its answer went out.
            var text = ""
            let counted = await eventually {
                text = metrics.render(sessions: [], process: .init())
                return text.contains(#"authgate_requests_total{route_kind="public",status_class="2xx"} 2"#)
            }
            #expect(counted, "\(text)")
            // Public requests have no phases: those are an authenticated request's.
            #expect(text.contains(#"authgate_exchange_phase_seconds_count{phase="queue"} 0"#), "\(text)")
            #expect(text.contains(#"authgate_exchange_phase_seconds_count{phase="upstream"} 0"#), "\(text)")
        }
    }

    @Test func aPublicRequestThatGetsNoSlotInTimeIsAnswered503() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        try await Self.withBoundedProxy(upstream, queueTimeout: .seconds(1)) { proxy, metrics, port in
            let first = Task { try await Self.get("/held", port: port) }
            #expect(await eventually { upstream.responder.arrivals("/held") == 1 })
            let r = try await Self.get("/waiting", port: port)
            #expect(r.status == 503)
            #expect(r.header("content-type") == "application/problem+json")
            #expect(r.text.contains("upstream-busy"), "\(r.text)")
            #expect(r.header("retry-after") != nil)
            #expect(upstream.responder.arrivals("/waiting") == 0, "refused before anything was sent")
            upstream.responder.releaseHeld()
            let held = try await first.value
            #expect(held.status == 200)
            var text = ""
            let counted = await eventually {
                text = metrics.render(sessions: [], process: .init())
                return text.contains(#"authgate_requests_total{route_kind="public",status_class="2xx"} 1"#)
            }
            #expect(counted, "\(text)")
            #expect(text.contains(#"authgate_requests_total{route_kind="public",status_class="5xx"} 1"#), "\(text)")
            #expect(text.contains(#"reason="timeout"} 1"#), "\(text)")
        }
    }
}
