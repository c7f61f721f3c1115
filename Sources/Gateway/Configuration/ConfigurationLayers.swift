import Configuration
public import Foundation
import Locking

/// The configuration from three layers, each overriding the one before: the JSON file, then
/// `AUTHGATE_*` environment variables, then command-line flags, for every field of the
/// configuration type `C`, nested ones and array elements included
/// (`AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT`, `--routes-0-upstream`).
///
/// The fields come from ``ConfigurationSchema`` (read from `C` itself), the lookups from
/// swift-configuration: a `ConfigReader` over a `CommandLineArgumentsProvider`, an
/// `EnvironmentVariablesProvider` and the file's values, in that order, whose access
/// reports say which layer answered. What the layers give is merged into one JSON document,
/// which the caller decodes and checks as it would the file alone (the unknown-field check
/// and the field-named errors stay). A variable or a flag that names no field is refused,
/// naming it. A scalar field takes text (`8080`, `true`, `https://…`), a list of scalars a
/// comma-separated list or a JSON array, and any field, whole objects and arrays included,
/// a JSON text (`AUTHGATE_ROUTES='[{"prefix":"/","upstream":"…"}]'`).
///
/// Secrets are never configuration values: the configuration names the files that hold
/// them (and the store key comes from `AUTHGATE_STORE_KEY` or a systemd credential), so a
/// flag can carry a path but never a secret; one that looks like a secret is refused.
public struct ConfigurationLayers<C: Decodable>: Sendable {
    /// The result: the merged document and where each value set in it came from.
    public struct Merged: Sendable {
        /// The merged configuration, as JSON.
        public var document: Data
        /// The layer of each path set by the environment or a flag, or by the file
        /// (`routes[0].upstream`); an unset path takes its default.
        public var sources: [String: ConfigurationSource]
    }

    /// The fields of `C`.
    public let schema: ConfigurationSchema

    /// Layers for `type`.
    public init(_ type: C.Type) {
        schema = ConfigurationSchema(type)
    }

    /// Merges the file (`nil`: none, `{}`), the environment and the flags (`arguments`, the
    /// ones the command did not take itself). Throws a ``GatewayError`` naming the
    /// file's syntax error, or the variable or flag that names no field or holds a value
    /// that cannot be read.
    public func merge(file: (path: String, data: Data)?, environment: [String: String], arguments: [String]) throws
        -> Merged
    {
        var document = JSONValue.object([])
        if let file {
            do {
                document = try StrictJSON.parse(Array(file.data))
            } catch {
                throw GatewayError.invalidJSON("\(error)", underlying: error)
            }
        }
        // Every path a layer may set: the file's leaves and whatever the variables and flags name.
        var paths = Set<[String]>()
        leaves(of: document, node: schema.root, at: [], into: &paths)
        var environmentNames: [[String]: String] = [:]
        for name in environment.keys.sorted() where name.hasPrefix(ConfigurationValues.environmentPrefix + "_") {
            if ConfigurationValues.nonConfigurationVariables.contains(name) || ConfigurationValues.isServiceLink(name) {
                continue
            }
            let tokens = name.dropFirst(ConfigurationValues.environmentPrefix.count + 1).split(
                separator: "_", omittingEmptySubsequences: false
            )
            .map(String.init)
            guard let path = ConfigurationNames.resolve(tokens, in: schema.root), !path.isEmpty else {
                throw GatewayError(
                    .unknownField, field: name,
                    "unknown environment variable \(name): no configuration field has that name "
                        + "(nested fields join with _, such as AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT)")
            }
            paths.insert(path)
            environmentNames[path] = name
        }
        var flagNames: [[String]: String] = [:]
        var singleValued: Set<String> = []
        for (index, argument) in arguments.enumerated() where argument.hasPrefix("-") && Int(argument) == nil {
            let name = String(argument.prefix { $0 != "=" })
            guard name.hasPrefix("--"), name.count > 2 else {
                // A short option (`-l`) is named; anything longer may be a value (a
                // base64url secret can start with `-`): named by its position only.
                let isShortOption = name.count <= 3 && name.dropFirst().allSatisfy(\.isLetter)
                throw GatewayError(
                    .invalidValue, field: isShortOption ? name : nil,
                    "\(isShortOption ? name : "argument \(index + 1) of the field flags"): "
                        + "configuration flags are long options, such as --loops 2")
            }
            let tokens = name.dropFirst(2).split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            let path = ConfigurationNames.resolve(tokens, in: schema.root)
            if ConfigurationValues.isSecretName(path?.last ?? String(name.dropFirst(2))) {
                throw GatewayError.at(
                    name, .secretExposed,
                    "secrets are never taken from flags; put the secret in a file and name it in the "
                        + "configuration (adminTokenFile, authorization.clientSecretFile, keyFile), or use AUTHGATE_STORE_KEY")
            }
            guard let path, !path.isEmpty else {
                throw GatewayError(
                    .unknownField, field: name, "unknown flag \(name): no configuration field has that name (see --help)")
            }
            paths.insert(path)
            flagNames[path] = name
            if schema.node(at: path)?.isScalar ?? true { singleValued.insert(name) }
        }
        if let stray = Self.strayValue(in: arguments, singleValued: singleValued) { throw stray }
        // The lookups, through swift-configuration: flags, then the environment, then the file.
        var fileValues: [AbsoluteConfigKey: ConfigValue] = [:]
        for path in paths {
            if let value = ConfigurationValues.value(at: path, in: document) {
                fileValues[AbsoluteConfigKey(path)] = ConfigValue(
                    .stringArray([ConfigurationValues.text(value)]), isSecret: false)
            }
        }
        let reporter = LastAccess()
        let reader = ConfigReader(
            providers: [
                CommandLineArgumentsProvider(arguments: ["authgate"] + arguments),
                // NUL never occurs in a variable's value: each value is read whole, as text.
                EnvironmentVariablesProvider(environmentVariables: environment, arraySeparator: "\u{0}")
                    .prefixKeys(with: ConfigKey([ConfigurationValues.environmentPrefix.lowercased()])),
                InMemoryProvider(name: "file", values: fileValues),
            ], accessReporter: reporter)
        var sources: [[String]: ConfigurationSource] = [:]
        var overrides: [(path: [String], source: ConfigurationSource, values: [String])] = []
        for path in paths.sorted(by: { $0.count < $1.count || ($0.count == $1.count && $0.lexicographicallyPrecedes($1)) }) {
            guard let values = reader.stringArray(forKey: ConfigKey(path)), let layer = reporter.winner else { continue }
            let source: ConfigurationSource =
                switch layer {
                case 0: .flag(flagNames[path] ?? ConfigurationNames.flagName(path))
                case 1: .environment(environmentNames[path] ?? ConfigurationNames.environmentName(path))
                default: .file(file?.path ?? "")
                }
            sources[path] = source
            if layer < 2 { overrides.append((path, source, values)) }
        }
        // Applied from the outside in; a deeper value from a lower layer than a whole
        // object or array set above it is left out.
        var setBy: [[String]: Int] = [:]
        for o in overrides {
            if (0..<o.path.count).contains(where: { setBy[Array(o.path.prefix($0))].map { $0 > o.source.precedence } ?? false }) {
                continue
            }
            let node = schema.node(at: o.path) ?? .scalar
            let value = try ConfigurationValues.json(o.values, node: node, isFlag: o.source.precedence == 3, source: o.source)
            document = try ConfigurationValues.setting(value, at: o.path, in: document, source: o.source)
            setBy[o.path] = o.source.precedence
        }
        // A value under a whole object or array a higher layer set is that layer's.
        func shadowed(_ path: [String], _ source: ConfigurationSource) -> Bool {
            (0..<path.count).contains { setBy[Array(path.prefix($0))].map { $0 > source.precedence } ?? false }
        }
        var named: [String: ConfigurationSource] = [:]
        for (path, source) in sources where !shadowed(path, source) { named[ConfigurationNames.display(path)] = source }
        return Merged(document: Data(ConfigurationValues.serialize(document).utf8), sources: named)
    }

    /// The leaf paths present in `value` (scalars, lists of scalars, maps, and what the schema
    /// does not know, whole).
    private func leaves(of value: JSONValue, node: ConfigurationSchema.Node?, at path: [String], into paths: inout Set<[String]>)
    {
        switch (value, node) {
        case (.object(let members), .object?):
            for m in members { leaves(of: m.value, node: schema.node(at: path + [m.name]), at: path + [m.name], into: &paths) }
        case (.array(let elements), .array(let element)?) where !element.isScalar:
            for (i, e) in elements.enumerated() { leaves(of: e, node: element, at: path + [String(i)], into: &paths) }
        default:
            if !path.isEmpty { paths.insert(path) }
        }
    }

    /// The first of `arguments` that no flag takes, as an error, or nil: a value before any
    /// flag, one after a `--name=value` flag, or a second one after a flag whose field takes
    /// one value (`singleValued`). swift-configuration would drop the first two and join the
    /// last into the flag's value. The error names the value's position among the field
    /// flags and the flag before it, never the value nor the flag's: a secret typed in the
    /// wrong place is not printed.
    static func strayValue(in arguments: [String], singleValued: Set<String>) -> GatewayError? {
        // The flag the next value would go to, and how many values it has taken.
        var flag: (name: String, inline: Bool, values: Int)?
        for (index, argument) in arguments.enumerated() {
            if argument.hasPrefix("--") {
                flag = (String(argument.prefix { $0 != "=" }), argument.contains("="), 0)
                continue
            }
            let after: String
            switch flag {
            case nil:
                after = "each value follows its flag, such as --loops 2"
            case (let name, true, _)?:
                after = "after \(name)=…, which holds its value"
            case (let name, false, let values)? where values > 0 && singleValued.contains(name):
                after = "after \(name) and its one value"
            case (let name, false, let values)?:
                flag = (name, false, values + 1)
                continue
            }
            return GatewayError(
                .invalidValue, field: nil,
                "argument \(index + 1) of the field flags: a value without a flag before it (\(after))")
        }
        return nil
    }
}

/// Keeps which provider answered the last read (its index in the reader's list), as
/// swift-configuration reports each access.
private final class LastAccess: AccessReporter, Sendable {
    private let last = Locked<Int?>(nil)
    var winner: Int? { last.withLock { $0 } }

    func report(_ event: AccessEvent) {
        let index = event.providerResults.firstIndex { result in
            if case .success(let lookup) = result.result { return lookup.value != nil }
            return false
        }
        last.withLock { $0 = index }
    }
}
