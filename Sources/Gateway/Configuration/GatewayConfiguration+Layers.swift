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
        } catch {
            throw attributed(error, merged.sources)
        }
    }

    /// `error` with the variable or flag that set its field (or the nearest enclosing field
    /// a layer set whole), when one did.
    static func attributed(_ error: GatewayError, _ sources: [String: ConfigurationSource]) -> GatewayError {
        var candidate = error.field ?? ""
        while !candidate.isEmpty {
            if let source = sources[candidate] { return error.attributed(to: source) }
            guard let cut = candidate.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            candidate = String(candidate[..<cut])
        }
        return error
    }
}
