extension ConfigurationError {
    /// The configuration field the error names (`routes[1].upstream`, `adminTokenFile`), when
    /// it names one: the message's first word, after `unknown field `, `missing field ` or
    /// `invalid value at `, if the configuration has a top-level field by its first name.
    public var field: String? {
        var text = Substring(description)
        for prefix in ["unknown field ", "missing field ", "invalid value at "] where text.hasPrefix(prefix) {
            text = text.dropFirst(prefix.count)
        }
        let named = String(text.prefix { !" :,".contains($0) })
        let top = String(named.prefix { $0 != "." && $0 != "[" })
        guard !top.isEmpty, Self.schema.node(at: [top]) != nil else { return nil }
        return named
    }

    private static let schema = ConfigurationSchema(GatewayConfiguration.self)
}
