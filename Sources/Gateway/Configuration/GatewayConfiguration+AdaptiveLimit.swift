extension GatewayConfiguration.Route {
    /// `routes[].queueTimeoutSeconds` when absent: the longest a request waits in AuthGate
    /// for a slot at its upstream. See docs/RUNTIME.md, "The adaptive in-flight limit".
    public static let queueTimeoutDefault = 10

    /// `routes[].adaptiveLimit` when absent: on for an authenticated route without
    /// `maxInFlight` (which then stays a fixed bound), off for a public one. A public route
    /// may opt in (`true`); `queueTimeoutSeconds` then applies to it too.
    public var adaptiveLimitDefault: Bool {
        (requiresAuthentication ?? true) && maxInFlight == nil
    }
}
