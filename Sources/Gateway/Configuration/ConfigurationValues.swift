import Foundation
import HTTPWire

/// The layers' values: the variables that are not fields, reading text as JSON, setting a
/// value into a document, writing JSON. Pure.
public enum ConfigurationValues {
    /// The prefix of the configuration's environment variables.
    public static var environmentPrefix: String { "AUTHGATE" }

    /// `AUTHGATE_*` variables that are not configuration fields, so never refused: the store
    /// key (a secret, read by `serve` itself), what the client commands and the app next to
    /// the sidecar read (`AUTHGATE_ADMIN_TOKEN`, `AUTHGATE_ADMIN_SOCKET`, `AUTHGATE_ADMIN_URL`),
    /// and the build scripts' (`AUTHGATE_BIN`, `AUTHGATE_SANITIZER`).
    public static var nonConfigurationVariables: Set<String> {
        [
            "AUTHGATE_STORE_KEY", "AUTHGATE_ADMIN_TOKEN", "AUTHGATE_ADMIN_SOCKET", "AUTHGATE_ADMIN_URL", "AUTHGATE_BIN",
            "AUTHGATE_SANITIZER",
        ]
    }

    /// Whether `name` is one of the variables Kubernetes puts in every pod for a Service
    /// called `authgate` (service links: `AUTHGATE_SERVICE_HOST`, `AUTHGATE_SERVICE_PORT_HTTP`,
    /// `AUTHGATE_PORT`, `AUTHGATE_PORT_8080_TCP_ADDR`, …): not configuration, never refused.
    public static func isServiceLink(_ name: String) -> Bool {
        let prefix = environmentPrefix + "_"
        guard name.hasPrefix(prefix) else { return false }
        let rest = name.dropFirst(prefix.count).split(separator: "_", omittingEmptySubsequences: false)
        switch rest.first {
        case "SERVICE":
            return rest.count >= 2 && (rest[1] == "HOST" || rest[1] == "PORT")
        case "PORT":
            if rest.count == 1 { return true }
            guard rest.count >= 3, rest[1].allSatisfy(\.isNumber), ["TCP", "UDP", "SCTP"].contains(rest[2]) else { return false }
            return rest.count == 3 || (rest.count == 4 && ["PROTO", "PORT", "ADDR"].contains(rest[3]))
        default:
            return false
        }
    }

    /// Whether a name (a field's, or a flag's without its dashes) says it holds a secret
    /// itself: `clientSecret`, `password`, `admin-token`, `store-key`; not one naming a file
    /// or an endpoint (`clientSecretFile`), nor a switch (`adminTokenDisabled`).
    public static func isSecretName(_ name: String) -> Bool {
        let n = name.lowercased().filter { $0 != "-" && $0 != "_" }
        if ["file", "path", "endpoint", "header", "disabled"].contains(where: { n.hasSuffix($0) }) { return false }
        return ["secret", "password", "privatekey", "apikey", "admintoken", "storekey"].contains { n.contains($0) }
    }

    /// The value at `path` in `document`, if there is one.
    static func value(at path: [String], in document: JSONValue) -> JSONValue? {
        var here = document
        for component in path {
            switch here {
            case .object:
                guard let next = here[component] else { return nil }
                here = next
            case .array(let elements):
                guard let i = Int(component), elements.indices.contains(i) else { return nil }
                here = elements[i]
            default: return nil
            }
        }
        return here == .null ? nil : here
    }

    /// A value as one piece of text (what a variable would hold).
    static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): s
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        default: serialize(value)
        }
    }

    /// The JSON value of a variable's or a flag's text for a field of kind `node`. A flag's
    /// values come split at commas (swift-configuration's reading of `--a x,y` and `--a x
    /// --a y`) and are joined again; a flag with no value is `true`. Errors name `source`.
    static func json(
        _ values: [String], node: ConfigurationSchema.Node, isFlag: Bool, source: ConfigurationSource
    ) throws(GatewayError) -> JSONValue {
        if isFlag && values.isEmpty { return .bool(true) }
        let (name, field) = ("\(source)", source.layerName)
        let text = values.joined(separator: ",")
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !node.isScalar, trimmed.hasPrefix("[") || trimmed.hasPrefix("{") {
            do {
                return try StrictJSON.parse(Array(text.utf8))
            } catch {
                throw GatewayError(.invalidJSON, field: field, "\(name): not valid JSON: \(error)", underlying: error)
            }
        }
        switch node {
        case .string: return .string(text)
        case .integer, .number, .bool, .scalar: return scalar(text)
        case .array(let element) where element.isScalar:
            if text.isEmpty { return .array([]) }
            return .array(
                text.split(separator: ",", omittingEmptySubsequences: false).map {
                    element == .string ? .string(String($0)) : scalar(String($0).trimmingCharacters(in: .whitespaces))
                })
        default:
            throw GatewayError(
                .invalidValue, field: field,
                "\(name): this field takes a JSON \(node == .map ? "object" : "value"), such as {…} or […]")
        }
    }

    /// Text as JSON by its look: `true`/`false`, a number, else a string (the decoder then
    /// says, naming the field, when the type is not the field's).
    static func scalar(_ text: String) -> JSONValue {
        if text == "true" { return .bool(true) }
        if text == "false" { return .bool(false) }
        if let parsed = try? StrictJSON.parse(Array(text.utf8)), case .number = parsed { return parsed }
        return .string(text)
    }

    /// `document` with `value` at `path`, objects and array elements made on the way. An
    /// array grows by one element at a time: an index past its end is refused.
    static func setting(
        _ value: JSONValue, at path: [String], in document: JSONValue, source: ConfigurationSource
    ) throws(GatewayError) -> JSONValue {
        guard let first = path.first else { return value }
        let rest = Array(path.dropFirst())
        if let index = Int(first), first.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            var elements: [JSONValue] = []
            if case .array(let e) = document { elements = e }
            guard index <= elements.count else {
                throw GatewayError(
                    .invalidValue, field: source.layerName,
                    "\(source): there is no element \(index) to set (the array has \(elements.count); the next one is \(elements.count))"
                )
            }
            if index == elements.count { elements.append(.object([])) }
            elements[index] = try setting(value, at: rest, in: elements[index], source: source)
            return .array(elements)
        }
        var members: [(name: String, value: JSONValue)] = []
        if case .object(let m) = document { members = m }
        if let i = members.firstIndex(where: { $0.name == first }) {
            members[i].value = try setting(value, at: rest, in: members[i].value, source: source)
        } else {
            members.append((first, try setting(value, at: rest, in: .object([]), source: source)))
        }
        return .object(members)
    }

    /// `value` as compact JSON text.
    static func serialize(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .number(let n): n
        case .string(let s): Problem.quote(s)
        case .array(let elements): "[" + elements.map { Self.serialize($0) }.joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.map { Problem.quote($0.name) + ":" + Self.serialize($0.value) }.joined(separator: ",") + "}"
        }
    }
}
