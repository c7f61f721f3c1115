import AuthCore
import CoreMetrics
import Gateway
import Testing

/// The exposition against the Prometheus naming and exposition conventions, without sockets.
struct GatewayMetricsTests {
    /// The exposition's samples by series (`name{labels}`), its `# TYPE`s and `# HELP`s.
    struct Exposition {
        var samples: [String: String] = [:]
        var types: [String: String] = [:]
        var help: [String: String] = [:]
        var typeLinesWithoutHelpBefore: [String] = []

        init(_ text: String) {
            var previous = ""
            for line in text.split(separator: "\n").map(String.init) {
                if line.hasPrefix("# TYPE ") {
                    let parts = line.split(separator: " ").map(String.init)
                    types[parts[2]] = parts[3]
                    if !previous.hasPrefix("# HELP \(parts[2]) ") { typeLinesWithoutHelpBefore.append(parts[2]) }
                } else if line.hasPrefix("# HELP ") {
                    let rest = line.dropFirst("# HELP ".count)
                    let name = String(rest.prefix { $0 != " " })
                    help[name] = String(rest.dropFirst(name.count + 1))
                } else if !line.hasPrefix("#") {
                    let split = line.lastIndex(of: " ")!
                    samples[String(line[..<split])] = String(line[line.index(after: split)...])
                }
                previous = line
            }
        }
    }

    /// A gateway's metrics with a session's own counters registered as its `AuthActor` does.
    func metrics(sessions: [String] = ["default", "billing"]) -> GatewayMetrics {
        let m = GatewayMetrics(sessions: sessions)
        for s in sessions {
            for outcome in ["success", "transient", "terminal", "loop_guard"] {
                _ = Counter(
                    label: "authgate_refreshes_total", dimensions: [("session", s), ("outcome", outcome)], factory: m.factory)
            }
            _ = Counter(label: "authgate_token_store_failures_total", dimensions: [("session", s)], factory: m.factory)
        }
        return m
    }

    func render(_ m: GatewayMetrics, free: Int? = 1 << 30) -> Exposition {
        Exposition(
            m.render(
                sessions: [.init(name: "default", refreshing: false, loggedIn: true)],
                process: .init(proxyConnections: 3, stateDirectoryFreeBytes: free)))
    }

    @Test func everyFamilyHasHelpTextRightBeforeItsType() {
        let e = render(metrics())
        #expect(e.types.count >= 16)
        #expect(e.typeLinesWithoutHelpBefore.isEmpty, "no HELP for \(e.typeLinesWithoutHelpBefore)")
        #expect(Set(e.types.keys).isSubset(of: Set(GatewayMetrics.helpTexts.keys)))
        for (name, text) in e.help {
            #expect(!text.isEmpty && !text.contains("\n"), "\(name)")
        }
    }

    @Test func withHelpLeavesTheSamplesAloneAndAddsNoHelpTwice() {
        let text = "# TYPE authgate_open_connections gauge\nauthgate_open_connections 2.0\n# TYPE other counter\nother 1\n"
        let once = GatewayMetrics.withHelp(text)
        #expect(
            once
                == "# HELP authgate_open_connections Connections open on the proxy listener.\n" + text)
        #expect(GatewayMetrics.withHelp(once) == once)
    }

    @Test func countersWhoseLabelsAreKnownStartAtZero() {
        let e = render(metrics())
        for session in ["default", "billing"] {
            for outcome in [
                "replayed", "refresh_failed", "skipped_body_streamed", "replay_limit", "current_token_rejected", "no_session",
            ] {
                #expect(e.samples[#"authgate_replays_total{session="\#(session)",outcome="\#(outcome)"}"#] == "0", "\(outcome)")
            }
            for reason in [
                "user_initiated", "refresh_rejected", "expired_without_refresh_token", "replaced_by_login", "tokens_missing",
                "user_info_rejected",
            ] {
                #expect(e.samples[#"authgate_logouts_total{session="\#(session)",reason="\#(reason)"}"#] == "0", "\(reason)")
            }
        }
        for kind in ["upstream-connect-failed", "upstream-timeout", "upstream-tls-failed", "upstream-connection-reset"] {
            #expect(e.samples[#"authgate_upstream_failures_total{kind="\#(kind)"}"#] == "0", "\(kind)")
        }
        #expect(!e.samples.keys.contains { $0.contains(#"kind="listen-failed""#) }, "not an upstream failure")
        for kind in ["public", "authenticated"] {
            for cls in ["1xx", "2xx", "3xx", "4xx", "5xx"] {
                #expect(e.samples[#"authgate_requests_total{route_kind="\#(kind)",status_class="\#(cls)"}"#] == "0")
            }
            #expect(e.samples[#"authgate_requests_abandoned_total{route_kind="\#(kind)"}"#] == "0")
        }
    }

    @Test func aClientThatWentAwayIsAbandonedNotAStatusClass() {
        let m = metrics()
        m.request(kind: "authenticated", status: 499, duration: .milliseconds(3))
        m.request(kind: "authenticated", status: 404, duration: .milliseconds(3))
        let e = render(m)
        #expect(e.samples[#"authgate_requests_abandoned_total{route_kind="authenticated"}"#] == "1")
        #expect(e.samples[#"authgate_requests_total{route_kind="authenticated",status_class="4xx"}"#] == "1")
        #expect(e.samples[#"authgate_request_duration_seconds_count{route_kind="authenticated"}"#] == "1")
        #expect(!e.samples.keys.contains { $0.contains("client_gone") })
        #expect(!e.samples.keys.contains { $0.contains("{route=") }, "the label is route_kind: it holds a kind")
    }

    @Test func unknownFreeSpaceIsAbsentRatherThanMinusOne() {
        let m = metrics()
        #expect(render(m, free: 4096).samples["authgate_state_directory_free_bytes"] == "4096.0")
        let unknown = render(m, free: nil)
        #expect(unknown.samples["authgate_state_directory_free_bytes"] == nil)
        #expect(unknown.types["authgate_state_directory_free_bytes"] == nil)
        #expect(!unknown.samples.values.contains("-1.0"))
        #expect(render(m, free: 8192).samples["authgate_state_directory_free_bytes"] == "8192.0")
    }

    @Test func durationBucketsReachPastTheUpstreamTimeout() {
        let m = metrics()
        m.request(kind: "public", status: 200, duration: .seconds(45))
        m.phase(.upstream, .seconds(45))
        let e = render(m)
        for name in [
            "authgate_request_duration_seconds_bucket{route_kind=\"public\"",
            "authgate_exchange_phase_seconds_bucket{phase=\"upstream\"",
        ] {
            #expect(e.samples["\(name),le=\"30.0\"}"] == "0", "\(name)")
            #expect(e.samples["\(name),le=\"60.0\"}"] == "1", "\(name)")
            #expect(e.samples["\(name),le=\"120.0\"}"] == "1", "\(name)")
        }
    }
}
