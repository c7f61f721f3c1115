import AuthCore
import Foundation
import Gateway
import Testing

/// The configuration of replays, refresh lead, token-endpoint timeout and issuer discovery.
@Suite struct ReplayConfigurationTests {

    @Test func refreshLeadTakesSecondsOrAPercentage() throws {
        #expect(try GatewayConfigurationTests.load { $0["refreshLead"] = 45 }.refreshLead == .seconds(45))
        #expect(try GatewayConfigurationTests.load { $0["refreshLead"] = "50%" }.refreshLead == .percent(50))
        #expect(GatewayConfigurationTests.error { $0["refreshLead"] = "half" }?.hasPrefix("invalid value at refreshLead") == true)
        #expect(GatewayConfigurationTests.error { $0["refreshLead"] = "0%" } == "refreshLead must be a percentage from 1% to 99%")
        #expect(
            GatewayConfigurationTests.error { $0["refreshLead"] = "100%" } == "refreshLead must be a percentage from 1% to 99%")
        #expect(GatewayConfigurationTests.error { $0["refreshLead"] = -1 } == "refreshLead must be 0…86400 seconds")
        #expect(
            GatewayConfigurationTests.error {
                $0["refreshLead"] = 10
                $0["refreshSkewSeconds"] = 10
            } == "refreshLead and refreshSkewSeconds: set only one")
        #expect(GatewayConfigurationTests.error { $0["refreshSkewSeconds"] = -5 } == "refreshSkewSeconds must be 0…86400")
    }

    @Test func maxReplaysAndTheTokenEndpointTimeoutAreRangeChecked() throws {
        #expect(try GatewayConfigurationTests.load { $0["maxReplays"] = 0 }.maxReplays == 0)
        #expect(GatewayConfigurationTests.error { $0["maxReplays"] = 11 } == "maxReplays must be 0…10")
        #expect(GatewayConfigurationTests.error { $0["maxReplays"] = -1 } == "maxReplays must be 0…10")
        #expect(try GatewayConfigurationTests.load { $0["tokenEndpointTimeoutSeconds"] = 5 }.tokenEndpointTimeoutSeconds == 5)
        #expect(
            GatewayConfigurationTests.error { $0["tokenEndpointTimeoutSeconds"] = 0 }
                == "tokenEndpointTimeoutSeconds must be 1…300")
    }

    @Test func anIssuerStandsInForTheTokenEndpoint() throws {
        let c = try GatewayConfigurationTests.load { $0["authorization"] = ["issuer": "https://id.example.com/realms/main"] }
        #expect(c.authorization.issuer == "https://id.example.com/realms/main")
        #expect(c.authorization.tokenEndpoint == nil)
        #expect(
            GatewayConfigurationTests.error { $0["authorization"] = ["clientID": "x"] }
                == "authorization.tokenEndpoint is required (or set authorization.issuer to discover it)")
        #expect(
            GatewayConfigurationTests.error { $0["authorization"] = ["issuer": "https://id.example.com/?tenant=1"] }
                == "authorization.issuer must be an http or https URL without query or fragment")
    }
}

/// Values that cross a trust boundary in the configuration: every number in range, no
/// cleartext endpoint off loopback, no admin API without a token off loopback.
@Suite struct ConfigurationBoundsTests {

    @Test(arguments: [
        ("replayLimitBytes", -1, "replayLimitBytes must be 0…67108864"),
        ("replayLimitBytes", 1 << 30, "replayLimitBytes must be 0…67108864"),
        ("loops", 0, "loops must be 1…256"),
        ("connectTimeoutSeconds", 0, "connectTimeoutSeconds must be 1…300"),
        ("upstreamTimeoutSeconds", 0, "upstreamTimeoutSeconds must be 1…86400"),
        ("upstreamTimeoutSeconds", -30, "upstreamTimeoutSeconds must be 1…86400"),
    ])
    func numbersOutOfRangeAreRefusedNamingTheField(field: String, value: Int, message: String) {
        #expect(GatewayConfigurationTests.error { $0[field] = value } == message)
    }

    @Test func cleartextEndpointsAreRefusedOffLoopbackUnlessAllowed() throws {
        #expect(
            GatewayConfigurationTests.error { $0["authorization"] = ["tokenEndpoint": "http://id.example.com/token"] }
                == "authorization.tokenEndpoint must be https unless its host is loopback (or set allowInsecureHTTP: true)")
        #expect(
            GatewayConfigurationTests.error {
                $0["authorization"] = ["tokenEndpoint": "https://id.example.com/t", "revocationEndpoint": "http://10.0.0.1/r"]
            } == "authorization.revocationEndpoint must be https unless its host is loopback (or set allowInsecureHTTP: true)")
        #expect(
            GatewayConfigurationTests.error { $0["authorization"] = ["issuer": "http://id.example.com"] }
                == "authorization.issuer must be https unless its host is loopback (or set allowInsecureHTTP: true)")
        #expect(
            GatewayConfigurationTests.error { $0["userInfo"] = ["url": "http://api.example.com/me"] }
                == "userInfo.url must be https unless its host is loopback (or set allowInsecureHTTP: true)")
        #expect(
            GatewayConfigurationTests.error { $0["routes"] = [["prefix": "/", "upstream": "http://api.example.com"]] }
                == "routes[0].upstream must be https unless its host is loopback (or set allowInsecureHTTP: true)")
        // A public route carries no token: plain HTTP is its own business.
        _ = try GatewayConfigurationTests.load {
            $0["routes"] = [["prefix": "/", "upstream": "http://api.example.com", "requiresAuthentication": false]]
        }
        // Loopback, in every spelling, and the explicit opt-in.
        for host in ["127.0.0.1:8080", "127.1.2.3", "localhost:9000", "[::1]:8080"] {
            _ = try GatewayConfigurationTests.load { $0["authorization"] = ["tokenEndpoint": "http://\(host)/token"] }
        }
        _ = try GatewayConfigurationTests.load {
            $0["authorization"] = ["tokenEndpoint": "http://id.example.com/token"]
            $0["allowInsecureHTTP"] = true
        }
    }

    @Test func theAdminTokenCanBeTurnedOffOnlyOnLoopback() throws {
        let off: (inout [String: Any], String) -> Void = { c, host in
            c["admin"] = ["host": host, "port": 8081]
            c["adminTokenFile"] = nil
            c["adminTokenDisabled"] = true
        }
        _ = try GatewayConfigurationTests.load { off(&$0, "127.0.0.1") }
        _ = try GatewayConfigurationTests.load { off(&$0, "::1") }
        #expect(
            GatewayConfigurationTests.error { off(&$0, "0.0.0.0") }
                == "adminTokenDisabled: true is allowed only with admin.host on loopback (127.0.0.1, ::1, localhost)")
        #expect(GatewayConfigurationTests.error { off(&$0, "10.1.2.3") }?.hasPrefix("adminTokenDisabled") == true)
    }
}
