import AuthCore
import Testing

@testable import Gateway

/// The refresh timing every session gets from the configuration's refresh fields, over the
/// defaults or the timing the caller passed.
@Suite struct SessionConfigurationTests {
    struct Timing: Equatable, CustomStringConvertible {
        var skew: Duration
        var jitter: Duration
        var leadFraction: Double?
        var loopLimit: Int

        init(_ c: AuthActor.Configuration) {
            skew = c.skew
            jitter = c.jitter
            leadFraction = c.leadFraction
            loopLimit = c.refreshWindow.maximumAttempts
        }

        init(skew: Duration = .seconds(30), jitter: Duration = .seconds(5), leadFraction: Double? = nil, loopLimit: Int = 5) {
            self.skew = skew
            self.jitter = jitter
            self.leadFraction = leadFraction
            self.loopLimit = loopLimit
        }

        var description: String { "skew \(skew) jitter \(jitter) lead \(leadFraction.map { "\($0)" } ?? "-") limit \(loopLimit)" }
    }

    static func configuration(
        skew: Int? = nil, lead: RefreshLead? = nil, jitter: Int? = nil, loopLimit: Int? = nil
    ) -> GatewayConfiguration {
        var c = GatewayConfiguration(
            proxy: .init(host: "127.0.0.1", port: 0), admin: .init(host: "127.0.0.1", port: 0),
            authorization: .init(tokenEndpoint: "http://127.0.0.1:1/token"),
            routes: [.init(prefix: "/", upstream: "http://127.0.0.1:2")], stateDirectory: "/nonexistent")
        c.refreshSkewSeconds = skew
        c.refreshLead = lead
        c.refreshJitterSeconds = jitter
        c.refreshLoopLimit = loopLimit
        return c
    }

    static let cases: [(GatewayConfiguration, AuthActor.Configuration?, Timing)] = [
        (configuration(), nil, Timing()),
        (configuration(skew: 10), nil, Timing(skew: .seconds(10))),
        (configuration(lead: .seconds(20)), nil, Timing(skew: .seconds(20))),
        (configuration(lead: .percent(50)), nil, Timing(leadFraction: 0.5)),
        (configuration(jitter: 0, loopLimit: 7), nil, Timing(jitter: .zero, loopLimit: 7)),
        // The caller's timing (tests pass one) is the base the fields apply to.
        (configuration(), AuthActor.Configuration(skew: .seconds(1), jitter: .zero), Timing(skew: .seconds(1), jitter: .zero)),
        (
            configuration(lead: .percent(25), jitter: 2), AuthActor.Configuration(skew: .seconds(1), jitter: .zero),
            Timing(skew: .seconds(1), jitter: .seconds(2), leadFraction: 0.25)
        ),
    ]

    @Test(arguments: cases.indices)
    func theRefreshFieldsSetTheSessionsTiming(_ index: Int) {
        let (c, base, expected) = Self.cases[index]
        #expect(Timing(GatewayService.sessionConfiguration(c, base: base)) == expected)
    }

    @Test(arguments: [
        (configuration(), true), (configuration(skew: 30), false), (configuration(lead: .seconds(30)), false),
        (configuration(lead: .percent(50)), false),
    ])
    func aShortTokensLeadFollowsTheUpstreamOnlyWhenNoLeadIsSet(_ c: GatewayConfiguration, follows: Bool) {
        let session = GatewayService.sessionConfiguration(c, base: nil, upstreamLatency: { .milliseconds(700) })
        #expect((session.upstreamLatency?() == .milliseconds(700)) == follows)
    }
}
