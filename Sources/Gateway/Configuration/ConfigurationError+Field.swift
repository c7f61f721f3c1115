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
        // Probed when asked (an error's field is asked once), not kept in a global: the
        // schema's indirect-enum tree is held through tagged pointers that LeakSanitizer
        // cannot follow from a global, so it would report the whole tree as leaked.
        guard !top.isEmpty, ConfigurationSchema(GatewayConfiguration.self).node(at: [top]) != nil else { return nil }
        return named
    }
}
