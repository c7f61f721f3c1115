import AuthCore
import Runtime
import TestSupport
import Testing

@testable import Gateway

/// A reload that changes the upstream clients' settings retires the clients of the settings
/// it replaced (they close their connections once idle); one that keeps them retires nothing.
@Suite struct ReloadRetiresClientsTests {
    static func settings(_ client: UpstreamClientConfiguration) -> ProxySettings {
        ProxySettings(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:9")!)], clientConfiguration: client,
            rejectionPolicy: UpstreamRejectionPolicy(), replayRule: ReplayRule(), replayLimit: 1 << 20, livenessPath: nil,
            trustedProxies: [])
    }

    @Test func replacedClientsAreRetiredAndKeptOnesAreNot() {
        let proxy = ReverseProxy(routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:9")!)])
        let first = proxy.settings
        // The same client settings: the clients are kept, and not retired.
        proxy.replaceSettings(Self.settings(first.clientConfiguration))
        let same = proxy.settings
        #expect(same !== first && same.clients === first.clients && !first.clients.isRetired)
        // Another timeout: new clients; the old ones are retired.
        var longer = first.clientConfiguration
        longer.totalTimeout = Duration.seconds(600)
        proxy.replaceSettings(Self.settings(longer))
        let changed = proxy.settings
        #expect(changed.clients !== first.clients)
        #expect(first.clients.isRetired && !changed.clients.isRetired)
    }
}

/// A reload that changes a route's `maxInFlight` keeps the route's limiter, with the
/// exchanges it counts: the new bound is never exceeded by old and new requests together.
@Suite struct ReloadKeepsLimitersTests {
    static func settings(limit: Int, timeout: Int) -> ProxySettings {
        var route = ProxyRoute(prefix: "/api", upstream: UpstreamOrigin("http://127.0.0.1:9")!, requiresAuthentication: true)
        route.maxInFlight = limit
        route.queueTimeout = .seconds(timeout)
        return ProxySettings(
            routes: [route], clientConfiguration: UpstreamClientConfiguration(), rejectionPolicy: UpstreamRejectionPolicy(),
            replayRule: ReplayRule(), replayLimit: 1 << 20, livenessPath: nil, trustedProxies: [])
    }

    @Test func aNewLimitAppliesToTheSameLimiterWithWhatItCounts() async throws {
        let proxy = ReverseProxy(routes: [])
        proxy.replaceSettings(Self.settings(limit: 2, timeout: 30))
        let limiter = try #require(proxy.settings.limiters["/api"])
        try await limiter.acquire(.first)
        try await limiter.acquire(.first)
        // The waiter below must outlast any stall of a loaded run: an hour.
        let second = Self.settings(limit: 1, timeout: 3_600)
        #expect(limiter.limit == 2 && limiter.timeout == .seconds(30), "settings not installed change nothing")
        proxy.replaceSettings(second)
        #expect(proxy.settings.limiters["/api"] === limiter, "the route keeps its limiter")
        #expect(limiter.limit == 1 && limiter.timeout == .seconds(3_600))
        #expect(limiter.load.inFlight == 2, "the old exchanges stay counted")
        let waiting = Task { try await limiter.acquire(.first) }
        #expect(await eventually { limiter.load.waiting == 1 }, "the waiter joined the queue")
        limiter.release()
        #expect(limiter.load == (inFlight: 1, waiting: 1), "still at the new limit: nobody admitted")
        limiter.release()
        _ = try await waiting.value
        #expect(limiter.load.inFlight == 1)
        limiter.release()
    }
}
