extension GatewayError {
    // MARK: A configuration that cannot be used (exit 78)

    /// `field reason`: the value of `field` is wrong, e.g.
    /// `.invalid("maxReplays", "must be 0…10")` (``Code/invalidValue``).
    public static func invalid(_ field: String, _ reason: String) -> GatewayError {
        GatewayError(.invalidValue, field: field, "\(field) \(reason)")
    }

    /// `field: detail` with `code`, e.g. `.at("store.url", .secretExposed, "must not hold a
    /// password: put it in store.passwordFile")`.
    public static func at(
        _ field: String, _ code: Code, _ detail: String, underlying: (any Error & Sendable)? = nil
    ) -> GatewayError {
        GatewayError(code, field: field, "\(field): \(detail)", underlying: underlying)
    }

    /// `missing field <field>`: the file leaves out a field that has no default
    /// (``Code/missingField``).
    public static func missing(_ field: String) -> GatewayError {
        GatewayError(.missingField, field: field, "missing field \(field)")
    }

    /// `field reason`: a field that must be set in this configuration is not, e.g.
    /// `.required("store.url", "is required with store.kind postgres")` (``Code/missingField``).
    public static func required(_ field: String, _ reason: String) -> GatewayError {
        GatewayError(.missingField, field: field, "\(field) \(reason)")
    }

    /// `unknown field <path>`: the file has a key the configuration does not
    /// (``Code/unknownField``).
    public static func unknownField(_ path: String) -> GatewayError {
        GatewayError(.unknownField, field: path, "unknown field \(path)")
    }

    /// `not valid JSON: detail`: the file is not strict JSON (``Code/invalidJSON``; no field).
    public static func invalidJSON(_ detail: String, underlying: (any Error & Sendable)? = nil) -> GatewayError {
        GatewayError(.invalidJSON, field: nil, "not valid JSON: \(detail)", underlying: underlying)
    }

    /// `field reason`: `field` cannot go with another setting, or repeats one that must
    /// differ (``Code/conflict``).
    public static func conflict(_ field: String, _ reason: String) -> GatewayError {
        GatewayError(.conflict, field: field, "\(field) \(reason)")
    }

    /// `field reason`: `field` is well formed but cannot be honoured here (``Code/unsupported``).
    public static func unsupported(_ field: String, _ reason: String) -> GatewayError {
        GatewayError(.unsupported, field: field, "\(field) \(reason)")
    }

    /// `field: cannot read path (reason)`: the file `field` names cannot be read
    /// (``Code/unreadableFile``). `reason` says why without quoting the file.
    public static func unreadable(
        _ field: String, path: String, reason: String? = nil, underlying: (any Error & Sendable)? = nil
    ) -> GatewayError {
        at(field, .unreadableFile, "cannot read \(path)" + (reason.map { " (\($0))" } ?? ""), underlying: underlying)
    }

    /// An error that is not a configuration error met while reading the configuration,
    /// described as itself (``Code/configurationFailed``).
    public static func configurationFailed(_ error: any Error) -> GatewayError {
        GatewayError(.configurationFailed, field: nil, "\(error)", underlying: error)
    }

    /// This error attributed to the layer that set its field (a variable or a flag; any
    /// other source leaves it as it is).
    public func attributed(to source: ConfigurationSource) -> GatewayError {
        guard source.isVariableOrFlag else { return self }
        return GatewayError(code, field: field, message, underlying: underlying, source: source)
    }

    /// This error as met at `field` (a check run for it that does not know its name):
    /// `name: <this description>`, `name` being `field` unless given, with this code and
    /// this error underlying.
    public func prefixed(with field: String, named name: String? = nil) -> GatewayError {
        GatewayError(code, field: field, "\(name ?? field): \(description)", underlying: self)
    }
}

extension ConfigurationSource {
    /// Whether an `AUTHGATE_*` variable or a flag set the value (the layers an error names).
    var isVariableOrFlag: Bool {
        switch self {
        case .environment, .flag: true
        case .file, .defaultValue: false
        }
    }
}
