import AuthCore
import Foundation
import Gateway
import Testing

/// The configuration of replays, refresh lead, token-endpoint timeout and issuer discovery.
@Suite struct ReplayConfigurationTests {
    let base = GatewayConfigurationTests()

    @Test func refreshLeadTakesSecondsOrAPercentage() throws {
        #expect(try base.load { $0["refreshLead"] = 45 }.refreshLead == .seconds(45))
        #expect(try base.load { $0["refreshLead"] = "50%" }.refreshLead == .percent(50))
        #expect(base.error { $0["refreshLead"] = "half" }?.hasPrefix("invalid value at refreshLead") == true)
        #expect(base.error { $0["refreshLead"] = "0%" } == "refreshLead must be a percentage from 1% to 99%")
        #expect(base.error { $0["refreshLead"] = "100%" } == "refreshLead must be a percentage from 1% to 99%")
        #expect(base.error { $0["refreshLead"] = -1 } == "refreshLead must be 0…86400 seconds")
        #expect(
            base.error {
                $0["refreshLead"] = 10
                $0["refreshSkewSeconds"] = 10
            } == "refreshLead and refreshSkewSeconds: set only one")
        #expect(base.error { $0["refreshSkewSeconds"] = -5 } == "refreshSkewSeconds must be 0…86400")
    }

    @Test func maxReplaysAndTheTokenEndpointTimeoutAreRangeChecked() throws {
        #expect(try base.load { $0["maxReplays"] = 0 }.maxReplays == 0)
        #expect(base.error { $0["maxReplays"] = 11 } == "maxReplays must be 0…10")
        #expect(base.error { $0["maxReplays"] = -1 } == "maxReplays must be 0…10")
        #expect(try base.load { $0["tokenEndpointTimeoutSeconds"] = 5 }.tokenEndpointTimeoutSeconds == 5)
        #expect(base.error { $0["tokenEndpointTimeoutSeconds"] = 0 } == "tokenEndpointTimeoutSeconds must be 1…300")
    }

    @Test func anIssuerStandsInForTheTokenEndpoint() throws {
        let c = try base.load { $0["authorization"] = ["issuer": "https://id.example.com/realms/main"] }
        #expect(c.authorization.issuer == "https://id.example.com/realms/main")
        #expect(c.authorization.tokenEndpoint == nil)
        #expect(
            base.error { $0["authorization"] = ["clientID": "x"] }
                == "authorization.tokenEndpoint is required (or set authorization.issuer to discover it)")
        #expect(
            base.error { $0["authorization"] = ["issuer": "https://id.example.com/?tenant=1"] }
                == "authorization.issuer must be an http or https URL without query or fragment")
    }
}
