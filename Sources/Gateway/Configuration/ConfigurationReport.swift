import Foundation

/// What `authgate serve --print-config` prints: every field of the effective configuration,
/// one a line, with its value (as JSON) and where it came from; the fields left unset with
/// `default`; then the secrets, always `<redacted>`, with where each is read from. Pure.
///
/// ```
/// authorization.tokenEndpoint = "https://id.example.com/token"   # env AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT
/// loops = 2                                                       # flag --loops
/// refreshSkewSeconds                                              # default
/// secret: admin token = <redacted>                                # file /run/secrets/admin-token (adminTokenFile)
/// ```
public enum ConfigurationReport {
    /// The report of `layered`; `environment` tells where the store key comes from.
    public static func render(_ layered: GatewayConfiguration.Layered, environment: [String: String]) -> String {
        let schema = ConfigurationSchema(GatewayConfiguration.self)
        let document = (try? StrictJSON.parse(Array(layered.document))) ?? .object([])
        var rows: [(String, String)] = []
        func walk(_ value: JSONValue?, _ node: ConfigurationSchema.Node, _ path: [String]) {
            let name = ConfigurationNames.display(path)
            switch (value, node) {
            case (.object(let members)?, .object(let fields)):
                for f in fields { walk(members.first { $0.name == f.name }?.value, f.node, path + [f.name]) }
            case (.array(let elements)?, .array(let element)) where !element.isScalar:
                if elements.isEmpty { rows.append(("\(name) = []", source(name, layered))) }
                for (i, e) in elements.enumerated() { walk(e, element, path + [String(i)]) }
            case (.object(let members)?, .map):
                for m in members {
                    let shown = ConfigurationValues.isSecretName(m.name) ? "<redacted>" : ConfigurationValues.serialize(m.value)
                    rows.append(("\(name).\(m.name) = \(shown)", source(name, layered)))
                }
            case (nil, _), (.null?, _):
                // Unset: an object's fields are listed when the object is, not one by one.
                rows.append((name, "default"))
            case (let v?, _):
                let shown =
                    if ConfigurationValues.isSecretName(path.last ?? "") {
                        "<redacted>"
                    } else if case .string(let text) = v, URLCredentials.hasPassword(text) {
                        // A password written into any URL field is never printed.
                        ConfigurationValues.serialize(.string(URLCredentials.redacted(text)))
                    } else {
                        ConfigurationValues.serialize(v)
                    }
                rows.append(("\(name) = \(shown)", source(name, layered)))
            }
        }
        walk(document, schema.root, [])
        let c = layered.configuration
        rows.append(
            (
                "secret: admin token = " + (c.adminTokenFile == nil ? "(none)" : "<redacted>"),
                c.adminTokenFile.map { "file \($0) (adminTokenFile)" }
                    ?? (c.adminTokenDisabled == true ? "adminTokenDisabled" : "missing")
            ))
        for s in c.allSessions {
            let field = s.name == GatewayConfiguration.defaultSession ? "authorization" : "sessions[\(s.name)].authorization"
            rows.append(
                (
                    "secret: client secret of \(s.name) = " + (s.authorization.clientSecretFile == nil ? "(none)" : "<redacted>"),
                    s.authorization.clientSecretFile.map { "file \($0) (\(field).clientSecretFile)" } ?? "public client"
                ))
        }
        let key: String =
            if environment["AUTHGATE_STORE_KEY"].map({ !$0.isEmpty }) == true {
                "env AUTHGATE_STORE_KEY"
            } else if let dir = environment["CREDENTIALS_DIRECTORY"],
                FileManager.default.fileExists(atPath: "\(dir)/authgate-store-key")
            {
                "systemd credential authgate-store-key"
            } else {
                c.keyFile.map { "file \($0) (keyFile)" } ?? "missing"
            }
        rows.append(("secret: store key = <redacted>", key))
        let width = min(72, rows.map(\.0.count).max() ?? 0)
        return rows.map { $0.0.padding(toLength: max(width, $0.0.count), withPad: " ", startingAt: 0) + "   # " + $0.1 }
            .joined(separator: "\n")
    }

    static func source(_ name: String, _ layered: GatewayConfiguration.Layered) -> String {
        var candidate = name
        while !candidate.isEmpty {
            if let s = layered.sources[candidate] { return s.description }
            guard let cut = candidate.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            candidate = String(candidate[..<cut])
        }
        return "default"
    }
}
