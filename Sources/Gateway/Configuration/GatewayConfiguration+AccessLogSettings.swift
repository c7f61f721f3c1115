extension GatewayConfiguration {
    /// The access log: one line per proxied request, through swift-log with the label
    /// `authgate.access`, so a handler of the user's can take them.
    ///
    /// ```json
    /// "accessLog": {"enabled": true, "sample": 10, "includeQuery": false}
    /// ```
    public struct AccessLogSettings: Sendable, Codable, Equatable {
        /// Whether requests are logged (default `true`).
        public var enabled: Bool?
        /// The percentage of requests logged, 0…100 (default 100: every one).
        public var sample: Int?
        /// Whether the query is logged (default `false`); values of parameters that carry
        /// credentials (`access_token`, `code`, `client_secret`, …) are redacted even then.
        public var includeQuery: Bool?

        /// Creates the settings; every option left `nil` takes its default.
        public init(enabled: Bool? = nil, sample: Int? = nil, includeQuery: Bool? = nil) {
            self.enabled = enabled
            self.sample = sample
            self.includeQuery = includeQuery
        }

        /// The percentage logged once the defaults and the off switch are applied.
        public var effectiveSample: Int { enabled == false ? 0 : sample ?? 100 }
    }
}
