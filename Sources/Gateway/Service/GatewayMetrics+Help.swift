import Foundation

extension GatewayMetrics {
    /// The `# HELP` text of every metric family AuthGate exports, by family name.
    ///
    /// swift-metrics has no place for help text, so the exposition gets it here, after the
    /// fact (``withHelp(_:)``). A family missing from this table is exported without one,
    /// which `GatewayMetricsTests` and `scripts/check-deploy` (`promtool check metrics`) refuse.
    public static let helpTexts: [String: String] = [
        "authgate_requests_total":
            "Proxied requests answered, by route kind (public, authenticated) and status class of the answer.",
        "authgate_requests_abandoned_total":
            "Proxied requests whose client went away before an answer was sent, by route kind.",
        "authgate_request_duration_seconds":
            "Time from a proxied request's head to the end of its answer, by route kind (answered requests only).",
        "authgate_exchange_phase_seconds":
            "Where authenticated requests spend their time, by phase (queue, token, upstream, refresh, ...).",
        "authgate_replays_total":
            "Requests whose token the upstream rejected, by session and outcome (replayed, refresh_failed, or why not).",
        "authgate_upstream_failures_total": "Upstream exchanges that ended without an upstream answer, by kind.",
        "authgate_refreshes_total":
            "Token refreshes, by session and outcome (success, transient, terminal, loop_guard).",
        "authgate_logouts_total": "Sessions ended, by session and reason.",
        "authgate_token_store_failures_total": "Token store reads or writes that failed, by session.",
        "authgate_dpop_proofs_refused_total":
            "DPoP proofs a server refused (invalid_dpop_proof), by session and where: token_endpoint or upstream.",
        "authgate_device_logins_total":
            "Device logins (RFC 8628) that ended, by session and outcome (approved, expired_token, access_denied, rejected, cancelled, ...).",
        "authgate_device_polls_total":
            "Device login polls of the token endpoint, by session and answer (authorization_pending, slow_down, issued, ...).",
        "authgate_refreshes_in_flight": "1 while a token refresh is in flight for the session, else 0.",
        "authgate_session_logged_in": "1 while the session holds tokens, else 0.",
        "authgate_unsaved_credentials":
            "1 while a rotated token pair is held only in memory because its save failed (a restart would log out).",
        "authgate_open_connections": "Connections open on the proxy listener.",
        "authgate_state_directory_free_bytes":
            "Bytes available on the state directory's file system (absent when it cannot be read).",
        "authgate_buffered_request_bytes": "Request body bytes held in memory, across every listener.",
        "authgate_upstream_queue_waiting":
            "Requests waiting in AuthGate for a slot at their upstream, across every in-flight limit (adaptive or maxInFlight).",
        "authgate_upstream_limit":
            "Exchanges allowed at an upstream at once: an origin's adaptive limit (route=\"*\") or a route's fixed maxInFlight.",
        "authgate_upstream_in_flight": "Exchanges at an upstream now, per in-flight limit.",
        "authgate_upstream_limit_waiting": "Requests waiting in AuthGate for a slot of an in-flight limit.",
        "authgate_upstream_baseline_latency_seconds":
            "An upstream's latency with nothing queued there, as its adaptive limit measures it.",
        "authgate_upstream_recent_latency_seconds": "An upstream's recent latency (a running mean), per in-flight limit.",
        "authgate_upstream_limit_changes_total":
            "Moves of an origin's adaptive limit, by reason: slow_start, queue_found, backoff, probe_down, probe_up, growth, restart.",
        "authgate_upstream_shed_total":
            "Requests answered 503 upstream-busy by an in-flight limit: at once (expected_wait) or after queueTimeoutSeconds (timeout).",
        "authgate_upstream_connections":
            "The proxy's own HTTP/1.1 connections to each http:// upstream origin, busy (connecting or serving an exchange) or idle in the pool.",
    ]

    /// `exposition` with a `# HELP` line before each `# TYPE` line whose family has a text in
    /// ``helpTexts``. Pure; a line already preceded by a `# HELP` line is left as it is.
    public static func withHelp(_ exposition: String) -> String {
        var out = ""
        out.reserveCapacity(exposition.utf8.count + 4096)
        var previousWasHelp = false
        // The text format has no empty lines, so none is lost by splitting on them.
        for line in exposition.split(separator: "\n") {
            if line.hasPrefix("# TYPE "), !previousWasHelp,
                let name = line.dropFirst("# TYPE ".count).split(separator: " ").first.map(String.init),
                let help = helpTexts[name]
            {
                out += "# HELP \(name) \(escapeHelp(help))\n"
            }
            previousWasHelp = line.hasPrefix("# HELP ")
            out += line
            out += "\n"
        }
        return out
    }

    /// Help text as the text format wants it: `\` and line feeds escaped.
    static func escapeHelp(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
