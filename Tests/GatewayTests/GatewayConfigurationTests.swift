import AuthCore
import Foundation
import Gateway
import Testing

/// `authgate serve --config`: every mistake in the file is refused with the field named.
@Suite struct GatewayConfigurationTests {
    static let minimal = """
        {
          "proxy": { "host": "127.0.0.1", "port": 8080 },
          "admin": { "host": "127.0.0.1", "port": 8081 },
          "adminTokenFile": "/run/admin-token",
          "authorization": { "tokenEndpoint": "https://id.example.com/oauth/token" },
          "routes": [ { "prefix": "/", "upstream": "https://api.example.com" } ],
          "stateDirectory": "/var/lib/authgate"
        }
        """

    /// The minimal file with `edit` applied to its parsed JSON.
    static func load(_ edit: (inout [String: Any]) -> Void) throws -> GatewayConfiguration {
        var object = try JSONSerialization.jsonObject(with: Data(Self.minimal.utf8)) as! [String: Any]
        edit(&object)
        return try GatewayConfiguration.load(from: JSONSerialization.data(withJSONObject: object))
    }

    /// What loading the minimal file with `edit` applied says is wrong (nil: it loads).
    static func error(_ edit: (inout [String: Any]) -> Void) -> String? {
        do {
            _ = try Self.load(edit)
            return nil
        } catch {
            return String(describing: error)
        }
    }

    @Test func theExampleAndTheMinimalFileLoad() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../deploy/authgate.example.json")
        // Its route's caller is a user this machine may not have: the user running the test
        // stands in, as in scripts/check-deploy.
        let me = String(cString: getpwuid(getuid())!.pointee.pw_name)
        let text = try String(contentsOf: example, encoding: .utf8).replacingOccurrences(of: "\"billing-app\"", with: "\"\(me)\"")
        let c = try GatewayConfiguration.load(from: Data(text.utf8))
        #expect(c.routes.count == 2)
        #expect(c.proxyRoutes[1].callers?.uids == [getuid()])
        let minimal = try Self.load { _ in }
        #expect(minimal.upstreamRejection == nil)
        #expect(minimal.proxyRoutes.first?.requiresAuthentication == true)
    }

    @Test func misspeltFieldsAreRefusedWithTheirPath() {
        #expect(Self.error { $0["refreshSkewSecond"] = 30 } == "unknown field refreshSkewSecond")
        #expect(Self.error { $0["proxy"] = ["host": "127.0.0.1", "port": 8080, "hots": "x"] } == "unknown field proxy.hots")
        #expect(
            Self.error {
                $0["routes"] = [
                    ["prefix": "/", "upstream": "https://a.example"],
                    ["prefix": "/b", "upstream": "https://b.example", "requiresAuth": false],
                ]
            } == "unknown field routes[1].requiresAuth")
        #expect(Self.error { $0["upstreamRejection"] = ["status": [419]] } == "unknown field upstreamRejection.status")
        #expect(
            Self.error {
                $0["authorization"] = ["tokenEndpoint": "https://id.example/t", "mapping": ["paths": ["acessToken": "x"]]]
            }
                == "unknown field authorization.mapping.paths.acessToken")
        // Free-form maps keep every key; an explicit null is the same as leaving a field out.
        #expect(
            Self.error {
                $0["authorization"] = ["tokenEndpoint": "https://id.example/t", "mapping": ["extraFields": ["audience": "api"]]]
            } == nil)
        #expect(Self.error { $0["loops"] = NSNull() } == nil)
    }

    @Test func wrongTypesMissingFieldsAndBadValuesNameTheField() {
        #expect(
            Self.error { $0["proxy"] = ["host": "127.0.0.1", "port": "8080"] } == "proxy.port must be an integer, not a string")
        #expect(Self.error { $0.removeValue(forKey: "stateDirectory") } == "missing field stateDirectory")
        #expect(Self.error { $0["admin"] = ["host": "127.0.0.1", "port": 70000] } == "admin.port must be 0…65535")
        #expect(Self.error { $0["routes"] = [] as [Any] } == "routes must name at least one route")
        #expect(Self.error { $0.removeValue(forKey: "adminTokenFile") }?.hasPrefix("adminTokenFile is required") == true)
        #expect(
            Self.error { $0["upstreamRejection"] = ["statuses": [401, 500]] }
                == "invalid value at upstreamRejection: statuses: 500 is not a 4xx status")
        #expect(
            Self.error { $0["upstreamRejection"] = ["realms": [] as [Any]] }?.hasPrefix(
                "invalid value at upstreamRejection: realms") == true)
        do {
            _ = try GatewayConfiguration.load(from: Data("{".utf8))
            Issue.record("a broken file loaded")
        } catch {
            #expect(String(describing: error) == "not valid JSON: expected a member name in double quotes at line 1, column 2")
        }
    }

    @Test func rejectionStatusesAndRealmsAreRead() throws {
        let c = try Self.load { $0["upstreamRejection"] = ["statuses": [401, 419], "realms": ["api"]] }
        #expect(c.upstreamRejection == (try UpstreamRejectionPolicy(statuses: [401, 419], realms: ["api"])))
    }

    @Test func sessionsAreNamedOnceAndRoutesNameOnlySessionsThatExist() {
        let billing: [String: Any] = ["name": "billing", "authorization": ["tokenEndpoint": "https://id.example/t"]]
        #expect(Self.error { $0["sessions"] = [billing] } == nil)
        #expect(Self.error { $0["sessions"] = [billing, billing] } == "sessions[1].name billing is used twice")
        #expect(
            Self.error { $0["sessions"] = [["name": "default", "authorization": ["tokenEndpoint": "https://id.example/t"]]] }?
                .hasPrefix("sessions[0].name must be") == true)
        #expect(
            Self.error { $0["sessions"] = [["name": "Bad Name", "authorization": ["tokenEndpoint": "https://id.example/t"]]] }?
                .hasPrefix("sessions[0].name must be") == true)
        #expect(
            Self.error { $0["sessions"] = [["name": "b", "authorization": ["tokenEndpoint": "ftp://x"]]] }
                == "sessions[0].authorization.tokenEndpoint must be an http or https URL with a host, without spaces, credentials or fragment"
        )
        #expect(
            Self.error { $0["routes"] = [["prefix": "/", "upstream": "https://a.example", "session": "billing"]] }
                == "routes[0].session names no session: billing")
        #expect(
            Self.error {
                $0["sessions"] = [billing]
                $0["routes"] = [["prefix": "/", "upstream": "https://a.example", "session": "billing"]]
            } == nil)
    }
}
