import Foundation
import Testing

@testable import Gateway

/// A routed request's end: counted once with its kind, status and the time since it was
/// routed, whenever that was.
@Suite struct RequestEndTests {
    @Test func theDurationIsTheTimeSinceTheRequestWasRouted() {
        let routed = ContinuousClock.now
        let end = RequestEnd(kind: "public", started: routed, facts: nil, trace: nil)
        #expect(end.elapsed(until: routed) == .zero)
        #expect(end.elapsed(until: routed.advanced(by: .milliseconds(250))) == .milliseconds(250))
        // Routed before the offsets' origin was first read: still the time between the two.
        let early = RequestEnd(kind: "public", started: routed.advanced(by: .seconds(-30)), facts: nil, trace: nil)
        #expect(early.elapsed(until: routed) == .seconds(30))
    }

    @Test func finishingCountsTheRequestOnceWithItsKindAndStatus() {
        let metrics = GatewayMetrics()
        let routed = ContinuousClock.now
        RequestEnd(kind: "authenticated", started: routed, facts: nil, trace: nil)
            .finish(metrics, status: 200, at: routed.advanced(by: .milliseconds(40)))
        RequestEnd(kind: "public", started: routed, facts: nil, trace: nil).finish(metrics, status: 501)
        let text = metrics.render(sessions: [], process: .init())
        #expect(text.contains(#"authgate_requests_total{route_kind="authenticated",status_class="2xx"} 1"#))
        #expect(text.contains(#"authgate_requests_total{route_kind="public",status_class="5xx"} 1"#))
        #expect(text.contains(#"authgate_request_duration_seconds_count{route_kind="authenticated"} 1"#))
    }
}
