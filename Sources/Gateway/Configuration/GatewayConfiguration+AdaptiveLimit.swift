extension GatewayConfiguration.Route {
    /// `routes[].queueTimeoutSeconds` when absent: the longest a request waits in AuthGate
    /// for a slot at its upstream. See docs/RUNTIME.md, "The adaptive in-flight limit".
    public static let queueTimeoutDefault = 10

    /// `routes[].adaptiveLimit` when absent: on for an authenticated route without
    /// `maxInFlight` (which then stays a fixed bound), off for a public one.
    public var adaptiveLimitDefault: Bool {
        (requiresAuthentication ?? true) && maxInFlight == nil
    }

    /// Checks `adaptiveLimit` of the route at `path` (`routes[2]`): public routes cannot
    /// take it yet (their requests are not queued).
    func validateAdaptiveLimit(at path: String) throws(ConfigurationError) {
        if adaptiveLimit == true, requiresAuthentication == false {
            throw .conflict("\(path).adaptiveLimit", "applies only to routes that require authentication")
        }
    }
}
