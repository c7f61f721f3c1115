import AuthCore
import Logging
import Runtime

extension GatewayConfiguration {
    /// The settings of the proxy's upstream clients.
    var upstreamClientConfiguration: UpstreamClientConfiguration {
        var config = UpstreamClientConfiguration()
        config.caFile = caFile
        if let s = connectTimeoutSeconds { config.connectTimeout = .seconds(s) }
        if let s = upstreamTimeoutSeconds { config.totalTimeout = .seconds(s) }
        if let s = upgradeIdleTimeoutSeconds { config.tunnelIdleTimeout = .seconds(s) }
        return config
    }

    /// The settings of the token endpoint's client: the upstream ones with its own, shorter
    /// timeout (a request waiting on a refresh waits at most this long).
    var tokenClientConfiguration: UpstreamClientConfiguration {
        var config = upstreamClientConfiguration
        config.totalTimeout = .seconds(tokenEndpointTimeoutSeconds ?? 10)
        return config
    }

    /// When a rejected request is sent again.
    var replayRule: ReplayRule { ReplayRule(maxReplays: maxReplays ?? 3) }

    /// The proxy's settings under this configuration; the access log writes to
    /// `accessLogger`, the upstream connections are counted in `connectionGauges`. Installed,
    /// they keep what the running ones have that did not change
    /// (``ReverseProxy/replaceSettings(_:)``).
    func proxySettings(accessLogger: Logger, connectionGauges: UpstreamConnectionGauges?) -> ProxySettings {
        var clientConfiguration = upstreamClientConfiguration
        clientConfiguration.connectionGauges = connectionGauges
        return ProxySettings(
            routes: proxyRoutes, clientConfiguration: clientConfiguration,
            rejectionPolicy: upstreamRejection ?? UpstreamRejectionPolicy(), replayRule: replayRule,
            replayLimit: replayLimitBytes ?? 1 << 20, livenessPath: proxyLivenessPath ?? "/livez",
            trustedProxies: Set(trustForwardedFrom ?? []), accessLog: AccessLog(accessLog, logger: accessLogger))
    }
}
