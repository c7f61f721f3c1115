public import Foundation

/// Reading the configuration file: strict JSON, then the types, then every key known, then
/// the values (``validate()``). Every error names the field at fault by its JSON path
/// (`sessions[1].authorization.tokenEndpoint`) and never quotes a string the file holds.
extension GatewayConfiguration {
    /// Decodes and checks a configuration; every error names the field at fault.
    ///
    /// Refused, besides what ``validate()`` refuses: text that is not strict JSON (with its
    /// line and column), a member given twice, a string with a control character, an empty
    /// string (but for `mapping.extraFields` values), a value of the wrong type, and a key
    /// the configuration does not have (a misspelt `refreshLaed` would otherwise be ignored
    /// without a word).
    public static func load(from data: Data) throws(GatewayError) -> GatewayConfiguration {
        let document: JSONValue
        do {
            document = try StrictJSON.parse(Array(data))
        } catch {
            throw .invalidJSON("\(error)", underlying: error)
        }
        guard case .object = document else {
            throw GatewayError(.invalidJSON, field: nil, "the configuration must be a JSON object, not \(document.kind)")
        }
        if let error = valueError(in: document, at: "") { throw error }
        let c: GatewayConfiguration
        do {
            c = try JSONDecoder().decode(GatewayConfiguration.self, from: data)
        } catch let DecodingError.keyNotFound(key, ctx) {
            throw .missing(path(ctx.codingPath + [key]))
        } catch let DecodingError.typeMismatch(type, ctx) {
            throw typeError(type, at: ctx.codingPath, in: document)
        } catch let DecodingError.valueNotFound(type, ctx) {
            throw .invalid(path(ctx.codingPath), "must be \(expected(type)), not null")
        } catch let DecodingError.dataCorrupted(ctx) {
            if ctx.codingPath.isEmpty { throw .invalidJSON(ctx.debugDescription) }
            if case .number = value(at: ctx.codingPath, in: document) {
                throw .invalid(path(ctx.codingPath), "must be an integer within range")
            }
            let field = path(ctx.codingPath)
            throw GatewayError(.invalidValue, field: field, "invalid value at \(field): \(ctx.debugDescription)")
        } catch {
            throw .configurationFailed(error)
        }
        let unknown: String?
        do {
            unknown = try unknownField(in: document, decoded: c)
        } catch {
            throw .configurationFailed(error)
        }
        if let unknown { throw .unknownField(unknown) }
        try c.validate()
        return c
    }

    /// The first field of `input` that the configuration does not have. Found by encoding
    /// what was decoded and looking for each input key in the result, so it cannot drift
    /// from the types. A key set to null is the same as a key left out.
    static func unknownField(in input: JSONValue, decoded: GatewayConfiguration) throws -> String? {
        let known = try StrictJSON.parse(Array(JSONEncoder().encode(decoded)))
        func first(_ input: JSONValue, _ known: JSONValue, _ at: String) -> String? {
            switch (input, known) {
            case (.object(let members), .object):
                for member in members where member.value != .null {
                    let here = join(at, member.name)
                    guard let k = known[member.name] else { return here }
                    if let found = first(member.value, k, here) { return found }
                }
            case (.array(let elements), .array(let knownElements)):
                for (i, (element, k)) in zip(elements, knownElements).enumerated() {
                    if let found = first(element, k, "\(at)[\(i)]") { return found }
                }
            default:
                break
            }
            return nil
        }
        return first(input, known, "")
    }

    /// The first string (value or member name) that has a control character or, as a value,
    /// is empty, or number that is not an integer an `Int` holds (no field takes another);
    /// an error naming where. Values in `mapping.extraFields` may be empty.
    static func valueError(in value: JSONValue, at path: String) -> GatewayError? {
        switch value {
        case .number(let literal):
            if JSONValue.integer(literal) == nil { return .invalid(path, "must be an integer (no fraction, not this large)") }
        case .string(let text):
            if text.unicodeScalars.contains(where: LoginFieldSyntax.isControl) {
                return .invalid(path, "must not contain control characters")
            }
            if text.isEmpty && !path.contains(".mapping.extraFields.") && !path.hasPrefix("mapping.extraFields.") {
                return .invalid(path, "must not be empty")
            }
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                if let error = valueError(in: element, at: "\(path)[\(i)]") { return error }
            }
        case .object(let members):
            for member in members {
                if member.name.unicodeScalars.contains(where: LoginFieldSyntax.isControl) || member.name.isEmpty {
                    return GatewayError(
                        .invalidValue, field: path.isEmpty ? nil : path,
                        "\(path.isEmpty ? "the configuration" : path) has a member name that is empty or has control characters")
                }
                if let error = valueError(in: member.value, at: join(path, member.name)) { return error }
            }
        default:
            break
        }
        return nil
    }

    /// "`proxy.port` must be an integer, not a string".
    static func typeError(_ type: Any.Type, at codingPath: [any CodingKey], in document: JSONValue) -> GatewayError {
        let expected = expected(type)
        let field = path(codingPath)
        guard let found = value(at: codingPath, in: document) else {
            return .invalid(field, "must be \(expected)")
        }
        if case .number = found, expected == "an integer" {
            return .invalid(field, "must be an integer within range (no fraction, no exponent beyond it)")
        }
        return .invalid(field, "must be \(expected), not \(found.kind)")
    }

    /// What a Swift type is called in a JSON file.
    static func expected(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt16.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        case is StringList.Type: "a string or an array of strings"
        default: "an object"
        }
    }

    /// The value at `codingPath` in `document`, when there is one.
    static func value(at codingPath: [any CodingKey], in document: JSONValue) -> JSONValue? {
        var here = document
        for key in codingPath {
            if let i = key.intValue, case .array(let elements) = here {
                guard elements.indices.contains(i) else { return nil }
                here = elements[i]
            } else {
                guard let next = here[key.stringValue] else { return nil }
                here = next
            }
        }
        return here
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.reduce("") { path, key in key.intValue.map { "\(path)[\($0)]" } ?? join(path, key.stringValue) }
    }

    private static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }
}
