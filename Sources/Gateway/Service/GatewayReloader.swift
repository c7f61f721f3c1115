import AuthCore
import Logging
import Runtime

/// Reloads a running gateway's configuration (SIGHUP, `POST /auth/reload`): reads it again
/// from where `serve` read it, decides the ``ReloadPlan``, and swaps in what it applies — the
/// proxy's settings snapshot, the admin token, each session's client secret and token
/// client. Connections, sessions and refreshes in flight keep what they started with.
///
/// One reload at a time (an actor); a refused one changes nothing.
public actor GatewayReloader {
    /// Reads the configuration again: the file, `AUTHGATE_*` variables and the original
    /// flags, layered and checked as at start. Throws a ``GatewayError``.
    public typealias Source = @Sendable () throws -> GatewayConfiguration

    /// What a reload swaps.
    struct Targets: Sendable {
        var proxy: ReverseProxy
        /// Weak: the admin API holds the reloader (`POST /auth/reload`), and a strong
        /// reference back would keep both, and the gateway they serve, alive forever.
        weak var admin: AdminAPI?
        var grantClients: [String: ReloadableGrantClient]
        var home: EventLoop
        var accessLogger: Logger
        /// The token endpoint's client now; a reload that makes a new one retires it.
        var tokenClient: UpstreamClient
    }

    private let source: Source?
    private var running: GatewayConfiguration
    private var secrets: GatewayService.Secrets
    private var targets: Targets?
    private let logger: Logger
    /// Reloads applied so far.
    public private(set) var generation = 0

    init(source: Source?, running: GatewayConfiguration, secrets: GatewayService.Secrets, logger: Logger) {
        self.source = source
        self.running = running
        self.secrets = secrets
        self.logger = logger
    }

    func attach(_ targets: Targets) { self.targets = targets }

    /// Whether the gateway was started with a source to reload from.
    public nonisolated var canReload: Bool { source != nil }

    /// Reads the configuration again and applies what can change without a restart.
    /// Throws a ``GatewayError``: ``GatewayError/Code/reloadRefused`` when the new
    /// configuration is invalid (its ``GatewayError/configurationError`` names the field), or
    /// ``GatewayError/Code/reloadUnavailable`` when there is nowhere to read it from; the
    /// running configuration keeps serving either way.
    public func reload() async throws(GatewayError) -> ReloadPlan {
        guard let source, let targets else { throw .reloadUnavailable }
        let new: GatewayConfiguration
        let newSecrets: GatewayService.Secrets
        let plan: ReloadPlan
        do {
            // Fields a reload does not apply keep their running values: what is checked and
            // applied is the configuration as it will run, never the file's restart-only fields.
            let read = try source()
            new = ReloadPlan.effective(running: running, new: read)
            newSecrets = try SecretSources.resolve(new, keeping: secrets.storeKey)
            plan = try ReloadPlan.decide(running: running, new: read, runningSecrets: secrets, newSecrets: newSecrets)
        } catch let error as GatewayError where error.code.isConfiguration {
            logger.error(
                "configuration reload refused; the running configuration stays",
                metadata: ["config.field": "\(error.field ?? "")", "error": "\(error)"])
            throw .reloadRefused(error)
        } catch {
            logger.error("configuration reload refused; the running configuration stays", metadata: ["error": "\(error)"])
            throw .reloadRefused(.configurationFailed(error))
        }
        var tokenTransport: (any HTTPTransport)?
        if plan.needsNewTokenClient {
            let old = targets.tokenClient
            let client = await UpstreamClient.make(on: targets.home, configuration: new.tokenClientConfiguration)
            tokenTransport = CurlTransport(client: client)
            self.targets?.tokenClient = client
            // Refreshes under way finish on the old client; it then keeps no connection open.
            old.loop.executeSoonOrNow { old.retire() }
        }
        targets.proxy.replaceSettings(
            new.proxySettings(accessLogger: targets.accessLogger, connectionGauges: targets.proxy.metrics.upstreamConnections))
        targets.admin?.replaceAdminToken(new.adminTokenDisabled == true ? nil : newSecrets.adminToken)
        var kept = newSecrets
        for (name, client) in targets.grantClients {
            // A session the new configuration no longer has keeps running (a restart removes
            // it), with its secret.
            guard new.allSessions.contains(where: { $0.name == name }) else {
                if name != GatewayConfiguration.defaultSession {
                    kept.sessionClientSecrets[name] = secrets.sessionClientSecrets[name]
                }
                client.replace(clientSecret: secrets.clientSecret(for: name), transport: tokenTransport)
                continue
            }
            client.replace(clientSecret: newSecrets.clientSecret(for: name), transport: tokenTransport)
        }
        // Fields that need a restart keep their running values, so the next plan still
        // reports them until the process restarts.
        running = new
        secrets = kept
        generation += 1
        logger.info(
            "configuration reloaded",
            metadata: [
                "config.reload": "\(generation)", "config.applied": "\(plan.applied.joined(separator: ","))",
                "config.restart_required": "\(plan.restartRequired.joined(separator: ","))",
                "config.rotated_secrets": "\(plan.rotatedSecrets.joined(separator: ","))",
            ])
        if !plan.restartRequired.isEmpty {
            logger.warning(
                "configuration fields changed that only a restart applies; they keep their running values",
                metadata: ["config.restart_required": "\(plan.restartRequired.joined(separator: ","))"])
        }
        return plan
    }
}

extension GatewayConfiguration {
    /// This configuration with the values of `running` in every field a reload does not apply.
    func keepingRestartFields(of running: GatewayConfiguration) -> GatewayConfiguration {
        var c = running
        c.routes = routes
        c.upstreamRejection = upstreamRejection
        c.maxReplays = maxReplays
        c.replayLimitBytes = replayLimitBytes
        c.connectTimeoutSeconds = connectTimeoutSeconds
        c.upstreamTimeoutSeconds = upstreamTimeoutSeconds
        c.upgradeIdleTimeoutSeconds = upgradeIdleTimeoutSeconds
        c.tokenEndpointTimeoutSeconds = tokenEndpointTimeoutSeconds
        c.caFile = caFile
        c.adminTokenFile = adminTokenFile
        c.adminTokenDisabled = adminTokenDisabled
        c.trustForwardedFrom = trustForwardedFrom
        c.proxyLivenessPath = proxyLivenessPath
        c.accessLog = accessLog
        c.authorization.clientSecretFile = authorization.clientSecretFile
        if var sessions = c.sessions, let new = self.sessions {
            for i in sessions.indices {
                if let match = new.first(where: { $0.name == sessions[i].name }) {
                    sessions[i].authorization.clientSecretFile = match.authorization.clientSecretFile
                }
            }
            c.sessions = sessions
        }
        return c
    }
}
