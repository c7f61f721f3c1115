import AuthCore
import Foundation
import Testing

@testable import Gateway

/// A reload is checked as the process will run after it: the fields it applies at their new
/// values, every other field at its running value. No reload leaves the process more exposed
/// than a restart with the same file would. Pure: no file, no socket.
@Suite struct ReloadExposureTests {
    static func decide(running: GatewayConfiguration, new: GatewayConfiguration) throws -> ReloadPlan {
        try ReloadPlan.decide(
            running: running, new: new, runningSecrets: ReloadPlanTests.secrets(), newSecrets: ReloadPlanTests.secrets())
    }

    /// Each check of ``GatewayConfiguration/validate()`` that reads a field a reload does not
    /// apply, beside one it does: (what runs, what the file says now, the field refused). The
    /// new file is valid for a restart; as a reload it would run with the old restart-only
    /// value, and is refused.
    static var cases:
        [(name: String, running: (inout GatewayConfiguration) -> Void, new: (inout GatewayConfiguration) -> Void, field: String)]
    {
        [
            (
                "adminTokenDisabled beside an admin socket that stays 0660",
                { $0.admin = .init(unix: "/run/authgate/admin.sock", mode: "0660") },
                {
                    $0.admin = .init(unix: "/run/authgate/admin.sock", mode: "0600")
                    $0.adminTokenDisabled = true
                    $0.adminTokenFile = nil
                }, "adminTokenDisabled"
            ),
            (
                "adminTokenDisabled beside an admin listener that stays off loopback",
                { $0.admin = .init(host: "0.0.0.0", port: 8081) },
                {
                    $0.admin = .init(host: "127.0.0.1", port: 8081)
                    $0.adminTokenDisabled = true
                }, "adminTokenDisabled"
            ),
            (
                "an http:// route off loopback beside allowInsecureHTTP that stays off",
                { _ in },
                {
                    $0.allowInsecureHTTP = true
                    $0.routes.append(.init(prefix: "/clear", upstream: "http://api.internal.example:8080"))
                }, "routes[2].upstream"
            ),
            (
                "an http:// route off loopback made by editing one beside allowInsecureHTTP that stays off",
                { _ in },
                {
                    $0.allowInsecureHTTP = true
                    $0.routes[0].upstream = "http://api.example.com"
                }, "routes[0].upstream"
            ),
            (
                "replayLimitBytes over a buffer budget that stays small",
                { $0.maxBufferedRequestBytes = 1 << 20 },
                {
                    $0.maxBufferedRequestBytes = 64 << 20
                    $0.replayLimitBytes = 32 << 20
                }, "replayLimitBytes"
            ),
        ]
    }

    @Test(arguments: cases.indices)
    func aReloadIsCheckedAsItWillRun(_ i: Int) throws {
        let c = Self.cases[i]
        var running = ReloadPlanTests.configuration()
        c.running(&running)
        try running.validate()
        var new = running
        c.new(&new)
        // A restart with the new file would be accepted ...
        try new.validate()
        // ... but a reload keeps the restart-only fields, and is refused naming the field.
        #expect(throws: GatewayError.self, "\(c.name)") { try Self.decide(running: running, new: new) }
        do {
            _ = try Self.decide(running: running, new: new)
        } catch let error as GatewayError {
            #expect(error.field == c.field, "\(c.name)")
            #expect(error.message.contains("fields that need a restart keep their running values"), "\(c.name)")
        }
    }

    /// The same changes once the restart-only field runs with the value that allows them: the
    /// reload applies them.
    @Test func theSameChangesAreAppliedWhenTheRunningValuesAllowThem() throws {
        var running = ReloadPlanTests.configuration()
        running.admin = .init(unix: "/run/authgate/admin.sock", mode: "0600")
        running.allowInsecureHTTP = true
        var new = running
        new.adminTokenDisabled = true
        new.adminTokenFile = nil
        new.routes.append(.init(prefix: "/clear", upstream: "http://api.internal.example:8080"))
        let plan = try Self.decide(running: running, new: new)
        #expect(plan.applied.contains("adminTokenDisabled") && plan.applied.contains("routes"))
        #expect(plan.restartRequired.isEmpty)
    }

    /// Every top-level field, changed at once: what a reload runs takes the new value of each
    /// reloadable field and the running value of every other. The changed configuration must
    /// change every field the schema has, so a field added to the configuration fails here
    /// until this test says what it changes to (and so whether a reload applies it).
    @Test func whatAReloadRunsTakesExactlyTheReloadableFieldsFromTheNewFile() throws {
        let running = ReloadPlanTests.configuration()
        var new = running
        new.proxy = .init(host: "127.0.0.1", port: 9080)
        new.admin = .init(unix: "/run/authgate/admin.sock", mode: "0600")
        new.probes = .init(host: "127.0.0.1", port: 9082)
        new.metrics = .init(host: "127.0.0.1", port: 9083)
        new.adminTokenFile = "/run/other-admin-token"
        new.adminTokenDisabled = false
        new.authorization.tokenEndpoint = "https://id2.example.com/token"
        new.sessions = [.init(name: "audit", authorization: .init(tokenEndpoint: "https://audit.example.com/token"))]
        new.routes = [.init(prefix: "/v2", upstream: "https://api2.example.com")]
        new.stateDirectory = "/var/lib/other"
        new.store = .init(kind: "file")
        new.keyFile = "/run/other-key"
        new.createKey = true
        new.loops = 3
        new.refreshSkewSeconds = 12
        new.refreshLead = .seconds(20)
        new.refreshJitterSeconds = 2
        new.refreshLoopLimit = 7
        new.maxReplays = 2
        new.tokenEndpointTimeoutSeconds = 4
        new.replayLimitBytes = 4096
        new.maxConnections = 77
        new.maxBufferedRequestBytes = 2 << 20
        new.caFile = "/etc/ssl/other.pem"
        new.upstreamRejection = try UpstreamRejectionPolicy(statuses: [401, 419])
        new.userInfo = .init(url: "https://id2.example.com/userinfo")
        new.proxyLivenessPath = "/healthz"
        new.connectTimeoutSeconds = 3
        new.upstreamTimeoutSeconds = 9
        new.upgradeIdleTimeoutSeconds = 11
        new.allowInsecureHTTP = true
        new.trustForwardedFrom = ["10.1.2.3"]
        new.accessLog = .init(enabled: true, sample: 50, includeQuery: true)

        let fields = try Self.members(running)
        let changed = try Self.members(new)
        let effective = try Self.members(ReloadPlan.effective(running: running, new: new))
        guard case .object(let schema) = ConfigurationSchema(GatewayConfiguration.self).root else {
            Issue.record("the schema's root is not an object")
            return
        }
        for field in schema.map(\.name) {
            #expect(changed[field] != fields[field], "\(field) is not changed by this test: say what it changes to")
            let expected = ReloadPlan.isReloadable(field) ? changed[field] : fields[field]
            #expect(effective[field] == expected, "\(field): reloadable \(ReloadPlan.isReloadable(field))")
        }
    }

    /// The top-level members of `c` as the configuration encodes them.
    static func members(_ c: GatewayConfiguration) throws -> [String: JSONValue] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard case .object(let members) = try StrictJSON.parse(Array(encoder.encode(c))) else { return [:] }
        return Dictionary(members.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
    }
}
