import AuthCore
import Runtime
import Testing

@testable import Gateway

/// Which in-flight limit bounds which route: one adaptive limit per upstream origin, shared
/// by its authenticated routes (and public ones that opt in); `maxInFlight` a fixed bound of
/// its own, or the cap of the adaptive one. And how a bad setting is refused.
@Suite struct AdaptiveLimitWiringTests {
    static func route(_ prefix: String, _ upstream: String, authenticated: Bool = true) -> ProxyRoute {
        let (origin, path) = ProxyRoute.parseUpstream(upstream)!
        return ProxyRoute(prefix: prefix, upstream: origin, upstreamPath: path, requiresAuthentication: authenticated)
    }

    static func settings(_ routes: [ProxyRoute]) -> ProxySettings {
        ProxySettings(
            routes: routes, clientConfiguration: UpstreamClientConfiguration(), rejectionPolicy: UpstreamRejectionPolicy(),
            replayRule: ReplayRule(), replayLimit: 1 << 20, livenessPath: nil, trustedProxies: [])
    }

    @Test func authenticatedRoutesOfOneOriginShareOneAdaptiveLimit() throws {
        var fixed = Self.route("/fixed", "http://127.0.0.1:9000")
        fixed.maxInFlight = 4
        var off = Self.route("/off", "http://127.0.0.1:9000")
        off.adaptiveLimit = false
        let s = Self.settings([
            Self.route("/a", "http://127.0.0.1:9000/v1"), Self.route("/b", "http://127.0.0.1:9000/v2"),
            Self.route("/c", "http://127.0.0.1:9001"), fixed, off,
            Self.route("/public", "http://127.0.0.1:9000", authenticated: false),
        ])
        let a = try #require(s.limiters["/a"])
        let b = try #require(s.limiters["/b"])
        let c = try #require(s.limiters["/c"])
        let f = try #require(s.limiters["/fixed"])
        #expect(a === b && a !== c, "one limit per origin, whatever the base path")
        #expect(a.isAdaptive && c.isAdaptive && !f.isAdaptive)
        #expect(a.origin == "http://127.0.0.1:9000" && a.route == "*")
        #expect(f.limit == 4 && f.route == "/fixed" && f !== a)
        #expect(s.limiters["/off"] == nil && s.limiters["/public"] == nil)
        #expect(a.limit == AdaptiveLimit.Parameters().initial, "it starts low and grows (slow start)")
        let origins = s.upstreamLimits.map { "\($0.origin) \($0.route)" }
        #expect(origins == ["http://127.0.0.1:9000 *", "http://127.0.0.1:9000 /fixed", "http://127.0.0.1:9001 *"])
    }

    @Test func maxInFlightOnAnAdaptiveRouteCapsItsOriginsLimit() throws {
        var capped = Self.route("/a", "http://127.0.0.1:9000")
        capped.maxInFlight = 6
        capped.adaptiveLimit = true
        let s = Self.settings([capped, Self.route("/b", "http://127.0.0.1:9000")])
        let a = try #require(s.limiters["/a"])
        #expect(a === s.limiters["/b"])
        #expect(a.isAdaptive && a.parameters.maximum == 6)
    }

    @Test func aReloadKeepsTheOriginsLimitAndWhatItLearnt() async throws {
        let proxy = ReverseProxy(routes: [])
        proxy.replaceSettings(Self.settings([Self.route("/a", "http://127.0.0.1:9000")]))
        let limiter = try #require(proxy.settings.limiters["/a"])
        try await limiter.acquire(.first)
        proxy.replaceSettings(
            Self.settings([Self.route("/a", "http://127.0.0.1:9000"), Self.route("/b", "http://127.0.0.1:9000")]))
        #expect(proxy.settings.limiters["/a"] === limiter && proxy.settings.limiters["/b"] === limiter)
        #expect(limiter.load.inFlight == 1, "what it counts stays counted")
        proxy.replaceSettings(Self.settings([Self.route("/a", "http://127.0.0.1:9002")]))
        #expect(proxy.settings.limiters["/a"] !== limiter, "another origin, another limit")
        limiter.release()
    }

    @Test func aReloadThatChangesTheParametersKeepsTheCountOfMoves() async throws {
        let limiter = InFlightLimiter(.init(), timeout: .seconds(5), origin: "http://127.0.0.1:9000")
        for _ in 0..<4 {
            try await limiter.acquire(.first)
            limiter.release(.init(latency: .milliseconds(10), inFlight: 1, outcome: .answered), at: .now)
        }
        #expect(limiter.controller.changes.slowStart == 1 && limiter.limit == 2)
        limiter.reconfigure(.init(maximum: 500), timeout: .seconds(5))
        #expect(limiter.controller.parameters.maximum == 500)
        #expect(limiter.reading.changes?.slowStart == 1, "authgate_upstream_limit_changes_total never goes back")
    }

    @Test func aPublicRouteMayOptIntoItsOriginsLimit() throws {
        var open = Self.route("/public", "http://127.0.0.1:9000", authenticated: false)
        open.adaptiveLimit = true
        let s = Self.settings([open, Self.route("/a", "http://127.0.0.1:9000")])
        let shared = try #require(s.limiters["/public"])
        #expect(shared === s.limiters["/a"])
    }

    @Test func theSettingsAreCheckedNamingTheField() {
        func error(_ route: [String: Any]) -> String? {
            GatewayConfigurationTests.error {
                $0["routes"] = [["prefix": "/", "upstream": "https://api.example.com"].merging(route) { $1 }]
            }
        }
        #expect(error(["adaptiveLimit": true]) == nil)
        #expect(error(["adaptiveLimit": false, "maxInFlight": 8]) == nil)
        #expect(error(["adaptiveLimit": true, "maxInFlight": 8]) == nil)
        #expect(error(["adaptiveLimit": true, "requiresAuthentication": false, "queueTimeoutSeconds": 5]) == nil)
        #expect(
            error(["requiresAuthentication": false, "queueTimeoutSeconds": 5])
                == "routes[0].maxInFlight and queueTimeoutSeconds apply only to routes that require authentication")
        #expect(
            error(["adaptiveLimit": true, "requiresAuthentication": false, "maxInFlight": 5])
                == "routes[0].maxInFlight and queueTimeoutSeconds apply only to routes that require authentication")
        #expect(error(["adaptiveLimit": "yes"])?.contains("routes[0].adaptiveLimit must be true or false") == true)
    }

    @Test func theDefaultsFollowTheRoute() throws {
        let authenticated = GatewayConfiguration.Route(prefix: "/", upstream: "https://api.example.com")
        let bounded = GatewayConfiguration.Route(prefix: "/", upstream: "https://api.example.com", maxInFlight: 8)
        let open = GatewayConfiguration.Route(prefix: "/", upstream: "https://api.example.com", requiresAuthentication: false)
        #expect(authenticated.adaptiveLimitDefault && !bounded.adaptiveLimitDefault && !open.adaptiveLimitDefault)
        #expect(GatewayConfiguration.Route.queueTimeoutDefault == 10)
    }
}
