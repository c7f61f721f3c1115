/// How configuration fields are named outside the file: environment variables and flags,
/// as swift-configuration's providers name them, and the paths errors show. Pure.
public enum ConfigurationNames {
    /// The variable of the field at `path` (`["authorization", "tokenEndpoint"]` →
    /// `AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT`), as swift-configuration's
    /// `EnvironmentVariablesProvider` names it: camelCase words split by `_`, upper case.
    public static func environmentName(_ path: [String]) -> String {
        ([ConfigurationValues.environmentPrefix] + path.flatMap(words)).map { $0.uppercased() }.joined(separator: "_")
    }

    /// The flag of the field at `path` (`--authorization-token-endpoint`), as
    /// `CommandLineArgumentsProvider` names it: camelCase words split by `-`, lower case.
    public static func flagName(_ path: [String]) -> String {
        "--" + path.flatMap(words).map { $0.lowercased() }.joined(separator: "-")
    }

    /// The words of a member name: `tokenEndpoint` → `token`, `Endpoint`; `clientID` →
    /// `client`, `ID` (a boundary is a lower-case letter followed by an upper-case one).
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        var previousLower = false
        for ch in name {
            if previousLower && ch.isUppercase {
                words.append(current)
                current = ""
            }
            current.append(ch)
            previousLower = ch.isLowercase
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// The field a variable or flag names, as a path, when the schema has it: `tokens` are
    /// the name's words (`["AUTHORIZATION", "TOKEN", "ENDPOINT"]`), compared without case;
    /// a decimal word is an index into an array. Nil when nothing matches.
    static func resolve(_ tokens: [String], in node: ConfigurationSchema.Node) -> [String]? {
        if tokens.isEmpty { return [] }
        switch node {
        case .object(let fields):
            for field in fields {
                let fieldWords = words(field.name).map { $0.lowercased() }
                guard tokens.count >= fieldWords.count,
                    zip(tokens, fieldWords).allSatisfy({ $0.lowercased() == $1 })
                else { continue }
                if let rest = resolve(Array(tokens.dropFirst(fieldWords.count)), in: field.node) {
                    return [field.name] + rest
                }
            }
            return nil
        case .array(let element):
            guard let index = tokens.first, index.utf8.allSatisfy({ (0x30...0x39).contains($0) }), index.utf8.count <= 6,
                let rest = resolve(Array(tokens.dropFirst()), in: element)
            else { return nil }
            return [String(Int(index)!)] + rest
        default:
            return nil
        }
    }

    /// `routes[0].prefix` for `["routes", "0", "prefix"]`: the path as errors name it.
    public static func display(_ path: [String]) -> String {
        path.reduce("") { text, component in
            if component.utf8.allSatisfy({ (0x30...0x39).contains($0) }), !component.isEmpty { return "\(text)[\(component)]" }
            return text.isEmpty ? component : "\(text).\(component)"
        }
    }
}
