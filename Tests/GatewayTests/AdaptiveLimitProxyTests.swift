import AuthGateTesting
import Foundation
import Gateway
import Testing

/// The adaptive limit over real sockets: on by default for the authenticated route, shared
/// with a public route of the same origin that opts in, and shown in `/metrics`.
@Suite struct AdaptiveLimitProxyTests {
    @Test func theAuthenticatedRouteIsBoundByItsOriginsLimitByDefault() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            let before = try await stack.admin("GET", "/metrics").text
            let unmeasured =
                #"authgate_upstream_baseline_latency_seconds{origin="http://127.0.0.1:\#(stack.apiServer.port)",route="*"} NaN"#
            #expect(before.lowercased().contains(unmeasured.lowercased()), "exported, as NaN, before the first window")
            for i in 0..<30 { #expect(try await stack.proxy("GET", "/api/\(i)").status == 200) }
            let metrics = try await stack.admin("GET", "/metrics").text
            let origin = "http://127.0.0.1:\(stack.apiServer.port)"
            #expect(metrics.contains(#"authgate_upstream_limit{origin="\#(origin)",route="*"}"#))
            #expect(metrics.contains(#"authgate_upstream_recent_latency_seconds{origin="\#(origin)",route="*"}"#))
            #expect(metrics.contains(#"authgate_upstream_shed_total{origin="\#(origin)",route="*",reason="expected_wait"} 0"#))
            #expect(metrics.contains(#"authgate_exchange_phase_seconds_count{phase="queue"} 30"#))
            // One request at a time: slow start's first window (four answers at one in
            // flight) doubles the limit. It may double again: the client can have the whole
            // body, and send its next request to the other loop, a moment before the
            // upstream's end reaches this one and frees the slot. Each scrape brings the
            // counter up to the controller's count, not by it again.
            let name = #"authgate_upstream_limit_changes_total{origin="\#(origin)",route="*",reason="slow_start"} "#
            let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(name) })
            let moves = try #require(Int(line.dropFirst(name.count)))
            #expect((1...2).contains(moves), "\(line)")
            #expect(metrics.contains(#"authgate_upstream_limit_changes_total{origin="\#(origin)",route="*",reason="backoff"} 0"#))
            #expect(try await stack.admin("GET", "/metrics").text.contains(String(line)))
        }
    }

    @Test func aPublicRouteThatOptsInSharesItsOriginsLimit() async throws {
        try await Stack.run { stack in
            try await stack.startGateway { c in
                c.routes[0].adaptiveLimit = true
                c.routes[0].queueTimeoutSeconds = 5
                c.routes[1].adaptiveLimit = false
            }
            for i in 0..<30 { #expect(try await stack.proxy("GET", "/public/\(i)").status == 200) }
            let metrics = try await stack.admin("GET", "/metrics").text
            let origin = "http://127.0.0.1:\(stack.apiServer.port)"
            // Only the public route sends: the samples are its own.
            #expect(metrics.contains(#"authgate_upstream_recent_latency_seconds{origin="\#(origin)",route="*"}"#))
        }
    }
}
