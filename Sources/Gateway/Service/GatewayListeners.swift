import Logging
import Runtime

/// A gateway's listeners: the proxy, the admin API, and the optional probe and metrics
/// listeners, opened and closed in the one order that is safe.
struct GatewayListeners: Sendable {
    let proxy: HTTPServer
    let admin: HTTPServer
    let probes: HTTPServer?
    let metrics: HTTPServer?

    /// Opens every listener. The admin listener first: a second instance over the same admin
    /// socket stops there, before it shares the proxy's port (SO_REUSEPORT would let it).
    /// The probe listener after the proxy: `/readyz` is not seen before the proxy accepts.
    /// When one cannot open, those already open are closed and the error goes on.
    func listen() async throws {
        do {
            try await admin.listen()
            try await proxy.listen()
            try await probes?.listen()
            try await metrics?.listen()
        } catch {
            await close(grace: .zero)
            throw error
        }
    }

    /// Closes every listener: the admin listener first (its socket file goes, when it is a
    /// Unix socket), then the probe and metrics listeners, then the proxy, whose exchanges
    /// in flight get up to `grace` to finish.
    func close(grace: Duration) async {
        await admin.close(grace: .zero)
        await probes?.close(grace: .zero)
        await metrics?.close(grace: .zero)
        await proxy.close(grace: grace)
    }

    /// Where each listener listens, for the log line that says the gateway is up.
    var metadata: Logger.Metadata {
        var m: Logger.Metadata = [
            "proxy.address": "\(proxy.address)", "admin.address": "\(admin.address)",
            "proxy.port": "\(proxy.port)", "admin.port": "\(admin.port)",
        ]
        if let probes { m["probes.address"] = "\(probes.address)" }
        if let metrics { m["metrics.address"] = "\(metrics.address)" }
        return m
    }
}
