import AuthCore
import Logging

extension GatewayService {
    /// The refresh timing of every session: `base` (``AuthCore/AuthActor/Configuration``'s
    /// defaults when `nil`) with what the configuration sets: `refresh_skew_seconds`, then
    /// `refresh_lead` (seconds before expiry, or a percentage of the lifetime left),
    /// `refresh_jitter_seconds` and `refresh_loop_limit`. When neither lead is set, a short
    /// token's lead follows `upstreamLatency` (``AuthCore/AuthActor/Configuration/upstreamLatency``).
    static func sessionConfiguration(
        _ c: GatewayConfiguration, base: AuthActor.Configuration?,
        upstreamLatency: (@Sendable () -> Duration?)? = nil
    ) -> AuthActor.Configuration {
        var sessionConfig = base ?? AuthActor.Configuration()
        if c.refreshLead == nil && c.refreshSkewSeconds == nil, let upstreamLatency {
            sessionConfig.upstreamLatency = upstreamLatency
        }
        if let skew = c.refreshSkewSeconds { sessionConfig.skew = .seconds(skew) }
        switch c.refreshLead {
        case .seconds(let s)?: sessionConfig.skew = .seconds(s)
        case .percent(let p)?: sessionConfig.leadFraction = Double(p) / 100
        case nil: break
        }
        if let s = c.refreshJitterSeconds { sessionConfig.jitter = .seconds(s) }
        if let n = c.refreshLoopLimit { sessionConfig.refreshWindow.maximumAttempts = n }
        return sessionConfig
    }

    /// Restores every session from the stores, in name order, before a listener opens. A
    /// session that cannot be restored is never left silently empty: the error is logged and
    /// `readiness` reports not ready, naming the first such session.
    static func restoreSessions(_ sessions: [String: GatewaySession], readiness: Readiness, logger: Logger) async {
        var restoreProblems: [String] = []
        for s in sessions.values.sorted(by: { $0.name < $1.name }) {
            do {
                let status = try await s.actor.restore()
                if status.isLoggedIn { s.userInfo?.expect(epoch: status.epoch) }
                logger.info(
                    "session restored",
                    metadata: [
                        "auth.session": "\(s.name)", "auth.logged_in": "\(status.isLoggedIn)", "auth.epoch": "\(status.epoch)",
                    ])
            } catch {
                // Never a silently empty session: not ready, and the reason is logged.
                restoreProblems.append("the session \(s.name) could not be restored: \(error)")
                logger.error(
                    "session restore failed; /readyz reports not ready",
                    metadata: ["auth.session": "\(s.name)", "error": "\(error)"])
            }
        }
        readiness.restored(restoreProblems.isEmpty, problem: restoreProblems.first)
    }
}
