import AuthCore
import Foundation
import Gateway
import Testing

/// What a reload applies, what it leaves for a restart and what it refuses, decided from the
/// running configuration and the new one alone: no file, no socket.
@Suite struct ReloadPlanTests {
    static let key = try! TokenStoreKey(base64: Data(repeating: 7, count: 32).base64EncodedString())

    static func configuration(_ path: String? = nil, _ value: Any? = nil) -> GatewayConfiguration {
        let object = path.map { ConfigurationBadInputTests.edited($0, value) } ?? ConfigurationBadInputTests.base
        return try! GatewayConfiguration.load(from: JSONSerialization.data(withJSONObject: object))
    }

    static func secrets(admin: String? = "admin-1", client: String? = nil, billing: String? = nil) -> GatewayService.Secrets {
        GatewayService.Secrets(
            clientSecret: client, adminToken: admin, storeKey: key,
            sessionClientSecrets: billing.map { ["billing": $0] } ?? [:])
    }

    static func plan(_ path: String, _ value: Any?) throws -> ReloadPlan {
        try ReloadPlan.decide(
            running: configuration(), new: configuration(path, value), runningSecrets: secrets(), newSecrets: secrets())
    }

    @Test func theSameConfigurationChangesNothing() throws {
        let plan = try ReloadPlan.decide(
            running: Self.configuration(), new: Self.configuration(), runningSecrets: Self.secrets(),
            newSecrets: Self.secrets())
        #expect(plan.isEmpty)
        #expect(!plan.needsNewUpstreamClients && !plan.needsNewTokenClient)
    }

    /// (field, new value, applied, restart required): each field that changes is classified,
    /// and named by its JSON path.
    static var cases: [(String, Any?, [String], [String])] {
        [
            ("routes[1].upstream", "https://billing2.example.com", ["routes[1].upstream"], []),
            ("routes[1].stripPrefix", true, ["routes[1].stripPrefix"], []),
            ("upstreamRejection", ["statuses": [401, 403]], ["upstreamRejection"], []),
            ("upstreamTimeoutSeconds", 5, ["upstreamTimeoutSeconds"], []),
            ("connectTimeoutSeconds", 2, ["connectTimeoutSeconds"], []),
            ("tokenEndpointTimeoutSeconds", 3, ["tokenEndpointTimeoutSeconds"], []),
            ("maxReplays", 0, ["maxReplays"], []),
            ("adminTokenFile", "/run/other-token", ["adminTokenFile"], []),
            ("authorization.clientSecretFile", "/run/secret", ["authorization.clientSecretFile"], []),
            ("sessions[0].authorization.clientSecretFile", "/run/b", ["sessions[0].authorization.clientSecretFile"], []),
            ("proxy.port", 9090, [], ["proxy.port"]),
            ("admin.host", "127.0.0.2", [], ["admin.host"]),
            ("loops", 2, [], ["loops"]),
            ("stateDirectory", "/var/lib/other", [], ["stateDirectory"]),
            ("keyFile", "/run/key", [], ["keyFile"]),
            ("authorization.tokenEndpoint", "https://id2.example.com/token", [], ["authorization.tokenEndpoint"]),
            ("sessions[1].authorization.clientID", "other", [], ["sessions[1].authorization.clientID"]),
            ("maxConnections", 10, [], ["maxConnections"]),
            ("accessLog.sample", 10, ["accessLog"], []),
            ("trustForwardedFrom", ["10.0.0.1"], ["trustForwardedFrom"], []),
        ]
    }

    @Test(arguments: cases.indices) func eachChangedFieldIsAppliedOrReportedForRestart(_ i: Int) throws {
        let (path, value, applied, restart) = Self.cases[i]
        let plan = try Self.plan(path, value)
        #expect(plan.applied == applied, "\(path)")
        #expect(plan.restartRequired == restart, "\(path)")
        #expect(plan.rotatedSecrets.isEmpty)
    }

    /// The grants that need no person, autoLogin and the device endpoint are the session's
    /// identity: a reload names them for a restart and leaves them at their running values.
    @Test func theLoginGrantBlocksWaitForARestart() throws {
        var new = Self.configuration()
        new.authorization.jwtBearer = .init(assertionFile: "/run/token")
        new.authorization.tokenExchange = .init(subjectTokenFile: "/run/subject")
        new.authorization.autoLogin = .init(grant: "jwt-bearer")
        new.authorization.deviceAuthorizationEndpoint = "https://id.example.com/device"
        let plan = try ReloadPlan.decide(
            running: Self.configuration(), new: new, runningSecrets: Self.secrets(), newSecrets: Self.secrets())
        #expect(plan.applied.isEmpty)
        #expect(
            Set(plan.restartRequired) == [
                "authorization.jwtBearer", "authorization.tokenExchange", "authorization.autoLogin",
                "authorization.deviceAuthorizationEndpoint",
            ], "\(plan.restartRequired)")
        let effective = ReloadPlan.effective(running: Self.configuration(), new: new)
        #expect(effective.authorization == Self.configuration().authorization)
    }

    @Test func theSessionsCredentialsWaitForARestartAndARoutesCertificateIsApplied() throws {
        var new = Self.configuration()
        new.authorization.clientCertificateFile = "/run/c.pem"
        new.authorization.clientCertificateKeyFile = "/run/c.key"
        new.authorization.dpop = .init(keyFile: "/run/dpop.pem")
        let plan = try ReloadPlan.decide(
            running: Self.configuration(), new: new, runningSecrets: Self.secrets(), newSecrets: Self.secrets())
        #expect(plan.applied.isEmpty)
        #expect(
            Set(plan.restartRequired)
                == ["authorization.clientCertificateFile", "authorization.clientCertificateKeyFile", "authorization.dpop"])
        // As the process runs after the reload: no route shows the new certificate or signs
        // with the new key before a restart.
        let effective = ReloadPlan.effective(running: Self.configuration(), new: new)
        #expect(effective.proxyRoutes.allSatisfy { $0.clientIdentity == nil })
        #expect(effective.authorization.dpop == nil)

        var both = Self.configuration()
        both.routes[1].clientCertificateFile = "/run/r.pem"
        both.routes[1].clientCertificateKeyFile = "/run/r.key"
        let routePlan = try ReloadPlan.decide(
            running: Self.configuration(), new: both, runningSecrets: Self.secrets(), newSecrets: Self.secrets())
        #expect(routePlan.restartRequired.isEmpty && !routePlan.applied.isEmpty)
        #expect(ReloadPlan.effective(running: Self.configuration(), new: both).proxyRoutes[1].clientIdentity != nil)
    }

    @Test func aRouteAddedChangesTheRoutesAsAWhole() throws {
        var new = Self.configuration()
        new.routes.append(.init(prefix: "/new", upstream: "https://new.example.com"))
        let plan = try ReloadPlan.decide(
            running: Self.configuration(), new: new, runningSecrets: Self.secrets(), newSecrets: Self.secrets())
        #expect(plan.applied == ["routes"] && plan.restartRequired.isEmpty)
    }

    @Test func timeoutsAndTheCABundleNeedNewClientsAndNothingElseDoes() throws {
        #expect(try Self.plan("upstreamTimeoutSeconds", 5).needsNewUpstreamClients)
        #expect(try !Self.plan("upstreamTimeoutSeconds", 5).needsNewTokenClient)
        #expect(try Self.plan("tokenEndpointTimeoutSeconds", 5).needsNewTokenClient)
        #expect(try !Self.plan("tokenEndpointTimeoutSeconds", 5).needsNewUpstreamClients)
        let both = try Self.plan("caFile", "/etc/ssl/other.pem")
        #expect(both.needsNewUpstreamClients && both.needsNewTokenClient)
        #expect(try !Self.plan("routes[1].upstream", "https://b.example.com").needsNewUpstreamClients)
    }

    @Test func aRestartFieldAndARouteTogetherApplyTheRouteAndReportTheRest() throws {
        var new = Self.configuration("routes[1].upstream", "https://billing2.example.com")
        new.proxy.port = 9999
        let plan = try ReloadPlan.decide(
            running: Self.configuration(), new: new, runningSecrets: Self.secrets(), newSecrets: Self.secrets())
        #expect(plan.applied == ["routes[1].upstream"])
        #expect(plan.restartRequired == ["proxy.port"])
    }

    @Test func rotatedSecretsAreNamedByTheirFieldNeverShown() throws {
        let plan = try ReloadPlan.decide(
            running: Self.configuration(), new: Self.configuration(),
            runningSecrets: Self.secrets(admin: "admin-1", client: "c-1", billing: "b-1"),
            newSecrets: Self.secrets(admin: "admin-2", client: "c-2", billing: "b-2"))
        #expect(plan.applied.isEmpty && plan.restartRequired.isEmpty)
        #expect(
            plan.rotatedSecrets == [
                "adminTokenFile", "authorization.clientSecretFile", "sessions[billing].authorization.clientSecretFile",
            ])
        let encoded = String(decoding: try JSONEncoder().encode(plan), as: UTF8.self)
        for secret in ["admin-1", "admin-2", "c-1", "c-2", "b-1", "b-2"] { #expect(!encoded.contains(secret)) }
    }

    @Test func aRouteToASessionTheProcessDoesNotRunIsRefusedWithTheFieldNamed() throws {
        var new = Self.configuration()
        new.sessions?.append(
            .init(name: "audit", authorization: .init(tokenEndpoint: "https://audit.example.com/token")))
        new.routes.append(.init(prefix: "/audit", upstream: "https://audit.example.com", session: "audit"))
        #expect {
            try ReloadPlan.decide(
                running: Self.configuration(), new: new, runningSecrets: Self.secrets(), newSecrets: Self.secrets())
        } throws: { error in
            let e = error as? GatewayError
            return e?.field == "routes[2].session" && "\(e!)".contains("needs a restart")
        }
    }

    @Test func everyTopLevelFieldNotListedAsReloadableNeedsARestart() {
        for field in ["proxy", "admin", "probes", "metrics", "store", "loops", "stateDirectory", "sessions", "userInfo"] {
            #expect(!ReloadPlan.reloadableFields.contains(field), "\(field)")
        }
    }

    @Test func configurationErrorsNameTheirField() {
        let upstream = GatewayError.invalid("routes[1].upstream", "must be http or https")
        #expect(upstream.field == "routes[1].upstream" && "\(upstream)" == "routes[1].upstream must be http or https")
        let unknown = GatewayError.unknownField("routes[0].prefx")
        #expect(unknown.field == "routes[0].prefx" && "\(unknown)" == "unknown field routes[0].prefx")
        let missing = GatewayError.missing("stateDirectory")
        #expect(missing.field == "stateDirectory" && "\(missing)" == "missing field stateDirectory")
        let unreadable = GatewayError.unreadable("adminTokenFile", path: "/x", reason: "no such file")
        #expect(unreadable.field == "adminTokenFile" && "\(unreadable)" == "adminTokenFile: cannot read /x (no such file)")
        let json = GatewayError.invalidJSON("line 1")
        #expect(json.field == nil && "\(json)" == "not valid JSON: line 1")
    }
}
