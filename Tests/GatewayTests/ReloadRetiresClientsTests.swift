import AuthCore
import Runtime
import Testing

@testable import Gateway

/// A reload that changes the upstream clients' settings retires the clients of the settings
/// it replaced (they close their connections once idle); one that keeps them retires nothing.
@Suite struct ReloadRetiresClientsTests {
    static func settings(_ client: UpstreamClientConfiguration, previous: ProxySettings?) -> ProxySettings {
        ProxySettings(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamBase("http://127.0.0.1:9")!)], clientConfiguration: client,
            rejectionPolicy: UpstreamRejectionPolicy(), replayRule: ReplayRule(), replayLimit: 1 << 20, livenessPath: nil,
            trustedProxies: [], previous: previous)
    }

    @Test func replacedClientsAreRetiredAndKeptOnesAreNot() {
        let proxy = ReverseProxy(routes: [ProxyRoute(prefix: "/", upstream: UpstreamBase("http://127.0.0.1:9")!)])
        let first = proxy.settings
        // The same client settings: the clients are kept, and not retired.
        let same = Self.settings(first.clientConfiguration, previous: first)
        proxy.replaceSettings(same)
        #expect(same.clients === first.clients && !first.clients.isRetired)
        // Another timeout: new clients; the old ones are retired.
        var longer = first.clientConfiguration
        longer.totalTimeout = Duration.seconds(600)
        let changed = Self.settings(longer, previous: same)
        proxy.replaceSettings(changed)
        #expect(changed.clients !== first.clients)
        #expect(first.clients.isRetired && !changed.clients.isRetired)
    }
}

/// A reload that changes a route's `maxInFlight` keeps the route's limiter, with the
/// exchanges it counts: the new bound is never exceeded by old and new requests together.
@Suite struct ReloadKeepsLimitersTests {
    static func settings(limit: Int, timeout: Int, previous: ProxySettings?) -> ProxySettings {
        var route = ProxyRoute(prefix: "/api", upstream: UpstreamBase("http://127.0.0.1:9")!, requiresAuthentication: true)
        route.maxInFlight = limit
        route.queueTimeout = .seconds(timeout)
        return ProxySettings(
            routes: [route], clientConfiguration: UpstreamClientConfiguration(), rejectionPolicy: UpstreamRejectionPolicy(),
            replayRule: ReplayRule(), replayLimit: 1 << 20, livenessPath: nil, trustedProxies: [], previous: previous)
    }

    @Test func aNewLimitAppliesToTheSameLimiterWithWhatItCounts() async throws {
        let first = Self.settings(limit: 2, timeout: 30, previous: nil)
        let limiter = try #require(first.limiters["/api"])
        try await limiter.acquire(.first)
        try await limiter.acquire(.first)
        let second = Self.settings(limit: 1, timeout: 5, previous: first)
        #expect(second.limiters["/api"] === limiter, "the route keeps its limiter")
        #expect(limiter.limit == 1 && limiter.timeout == .seconds(5))
        #expect(limiter.load.inFlight == 2, "the old exchanges stay counted")
        let waiting = Task { try await limiter.acquire(.first) }
        try await Task.sleep(for: .milliseconds(50))
        limiter.release()
        try await Task.sleep(for: .milliseconds(50))
        #expect(limiter.load == (inFlight: 1, waiting: 1), "still at the new limit: nobody admitted")
        limiter.release()
        try await waiting.value
        #expect(limiter.load.inFlight == 1)
        limiter.release()
    }
}
