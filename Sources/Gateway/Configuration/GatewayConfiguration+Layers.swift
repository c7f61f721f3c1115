public import Foundation

extension GatewayConfiguration {
    /// A configuration with where each of its values came from.
    public struct Layered: Sendable {
        /// The configuration, checked.
        public var configuration: GatewayConfiguration
        /// The layer of each value set by one (`routes[0].upstream` → `env AUTHGATE_ROUTES_0_UPSTREAM`).
        public var sources: [String: ConfigurationSource]
        /// The merged JSON document that was decoded.
        public var document: Data
    }

    /// The configuration from the file (nil: none), the `AUTHGATE_*` variables of
    /// `environment` and the configuration flags in `arguments`, each overriding the one
    /// before (``ConfigurationLayers``), then decoded and checked as ``load(from:)`` does. An
    /// error about a value set by a variable or a flag names that too.
    public static func load(
        file: (path: String, data: Data)?, environment: [String: String], arguments: [String]
    ) throws -> Layered {
        let merged = try ConfigurationLayers(GatewayConfiguration.self).merge(
            file: file, environment: environment, arguments: arguments)
        do {
            return Layered(configuration: try load(from: merged.document), sources: merged.sources, document: merged.document)
        } catch let error as ConfigurationError {
            throw attributed(error, merged.sources)
        }
    }

    /// `error` with the variable or flag that set the field it names, when one did.
    static func attributed(_ error: ConfigurationError, _ sources: [String: ConfigurationSource]) -> ConfigurationError {
        let message = error.description
        var field = Substring(message)
        for prefix in ["unknown field ", "missing field ", "invalid value at "] where field.hasPrefix(prefix) {
            field = field.dropFirst(prefix.count)
        }
        let named = String(field.prefix { !" :,".contains($0) })
        // The field, or the nearest enclosing one a layer set whole.
        var candidate = named
        while !candidate.isEmpty {
            if let source = sources[candidate] {
                switch source {
                case .environment, .flag: return ConfigurationError("\(message) (set by \(source))")
                default: return error
                }
            }
            guard let cut = candidate.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            candidate = String(candidate[..<cut])
        }
        return error
    }
}
