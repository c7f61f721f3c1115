extension ConfigurationError {
    /// `field reason`: the value of `field` is wrong, e.g.
    /// `.invalid("maxReplays", "must be 0…10")` (``Code/invalidValue``).
    public static func invalid(_ field: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(.invalidValue, field: field, "\(field) \(reason)")
    }

    /// `field: detail` with `code`, e.g. `.at("store.url", .secretExposed, "must not hold a
    /// password: put it in store.passwordFile")`.
    public static func at(
        _ field: String, _ code: Code, _ detail: String, underlying: (any Error & Sendable)? = nil
    ) -> ConfigurationError {
        ConfigurationError(code, field: field, "\(field): \(detail)", underlying: underlying)
    }

    /// `missing field <field>`: the file leaves out a field that has no default
    /// (``Code/missingField``).
    public static func missing(_ field: String) -> ConfigurationError {
        ConfigurationError(.missingField, field: field, "missing field \(field)")
    }

    /// `field reason`: a field that must be set in this configuration is not, e.g.
    /// `.required("store.url", "is required with store.kind postgres")` (``Code/missingField``).
    public static func required(_ field: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(.missingField, field: field, "\(field) \(reason)")
    }

    /// `unknown field <path>`: the file has a key the configuration does not
    /// (``Code/unknownField``).
    public static func unknownField(_ path: String) -> ConfigurationError {
        ConfigurationError(.unknownField, field: path, "unknown field \(path)")
    }

    /// `not valid JSON: detail`: the file is not strict JSON (``Code/invalidJSON``; no field).
    public static func invalidJSON(_ detail: String, underlying: (any Error & Sendable)? = nil) -> ConfigurationError {
        ConfigurationError(.invalidJSON, field: nil, "not valid JSON: \(detail)", underlying: underlying)
    }

    /// `field reason`: `field` cannot go with another setting, or repeats one that must
    /// differ (``Code/conflict``).
    public static func conflict(_ field: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(.conflict, field: field, "\(field) \(reason)")
    }

    /// `field reason`: `field` is well formed but cannot be honoured here (``Code/unsupported``).
    public static func unsupported(_ field: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(.unsupported, field: field, "\(field) \(reason)")
    }

    /// `field: cannot read path (reason)`: the file `field` names cannot be read
    /// (``Code/unreadableFile``). `reason` says why without quoting the file.
    public static func unreadable(
        _ field: String, path: String, reason: String? = nil, underlying: (any Error & Sendable)? = nil
    ) -> ConfigurationError {
        at(field, .unreadableFile, "cannot read \(path)" + (reason.map { " (\($0))" } ?? ""), underlying: underlying)
    }

    /// An error that is not a ``ConfigurationError`` met while reading the configuration,
    /// described as itself (``Code/other``).
    public static func other(_ error: any Error) -> ConfigurationError {
        ConfigurationError(.other, field: nil, "\(error)", underlying: error)
    }
}
