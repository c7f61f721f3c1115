import Foundation
import Gateway

/// A minimal configuration file around an `authorization` under test, loaded as `serve`
/// loads one: for the tests of the client's credentials and login grants.
enum AuthorizationFixture {
    /// The configuration with `authorization` merged over a token endpoint and client id.
    static func configuration(
        _ authorization: [String: Any], routes: [[String: Any]] = [["prefix": "/", "upstream": "https://api.example.com"]]
    ) throws -> GatewayConfiguration {
        let file: [String: Any] = [
            "proxy": ["host": "127.0.0.1", "port": 8080], "admin": ["host": "127.0.0.1", "port": 8081],
            "adminTokenFile": "/run/admin-token", "stateDirectory": "/var/lib/authgate",
            "authorization": ["tokenEndpoint": "https://id.example.com/token", "clientID": "gate"].merging(authorization) { $1 },
            "routes": routes,
        ]
        return try GatewayConfiguration.load(from: try JSONSerialization.data(withJSONObject: file))
    }

    /// Why that configuration is refused, or nil when it loads.
    static func refusal(_ authorization: [String: Any], routes: [[String: Any]]? = nil) -> String? {
        do {
            if let routes { _ = try configuration(authorization, routes: routes) } else { _ = try configuration(authorization) }
            return nil
        } catch {
            return String(describing: error)
        }
    }
}
