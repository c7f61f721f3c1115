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
