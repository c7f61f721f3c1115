import Foundation

extension GatewayConfiguration {
    /// Where the sessions' tokens and state are kept: the encrypted files in
    /// ``GatewayConfiguration/stateDirectory`` (`kind: "file"`, the default), or one
    /// PostgreSQL table that replicas share (`kind: "postgres"`).
    ///
    /// ```json
    /// "store": {"kind": "postgres", "url": "postgres://authgate@db:5432/authgate",
    ///           "passwordFile": "/run/secrets/db-password", "tlsMode": "require"}
    /// ```
    public struct Store: Sendable, Codable, Equatable {
        /// `file` (default) or `postgres`.
        public var kind: String?
        /// `postgres://USER@HOST[:PORT]/DATABASE`, without a password (postgres only).
        public var url: String?
        /// A file holding the role's password (postgres only).
        public var passwordFile: String?
        /// `disable`, `prefer` or `require` (default `require`; postgres only).
        public var tlsMode: String?
        /// The table (default `authgate_sessions`; postgres only).
        public var table: String?
        /// The refresh lease's term in seconds (default 10, 1…300; postgres only): renewed
        /// every third of it while a refresh is in flight, and how long a replica that died
        /// holding it keeps the others waiting. Waiting for another replica's lease gives up
        /// (503) after 30 s or three terms, whichever is longer.
        public var leaseSeconds: Int?

        /// Creates the settings.
        public init(
            kind: String? = nil, url: String? = nil, passwordFile: String? = nil, tlsMode: String? = nil,
            table: String? = nil, leaseSeconds: Int? = nil
        ) {
            self.kind = kind
            self.url = url
            self.passwordFile = passwordFile
            self.tlsMode = tlsMode
            self.table = table
            self.leaseSeconds = leaseSeconds
        }

        /// Whether the tokens go to PostgreSQL.
        public var isPostgres: Bool { kind == "postgres" }

        /// The allowed lease terms, in seconds.
        public static let leaseSecondsRange = 1...300
        /// The default lease term, in seconds.
        public static let defaultLeaseSeconds = 10

        /// The lease term and the longest wait for another replica's lease.
        public var leaseTerm: (term: Duration, maximumWait: Duration) {
            let seconds = leaseSeconds ?? Self.defaultLeaseSeconds
            return (.seconds(seconds), .seconds(max(30, 3 * seconds)))
        }
    }

    /// Checks `store` without connecting (the connection is checked at start).
    func validateStore() throws(GatewayError) {
        guard let store else { return }
        switch store.kind ?? "file" {
        case "file":
            for (name, value) in [
                ("url", store.url), ("passwordFile", store.passwordFile), ("tlsMode", store.tlsMode), ("table", store.table),
                ("leaseSeconds", store.leaseSeconds.map(String.init)),
            ] where value != nil {
                throw .conflict("store.\(name)", "applies only to store.kind postgres")
            }
        case "postgres":
            guard let url = store.url else { throw .required("store.url", "is required with store.kind postgres") }
            if URLCredentials.hasPassword(url) {
                // Refused before anything prints the configuration (--print-config, errors).
                throw .at("store.url", .secretExposed, "must not hold a password: put it in store.passwordFile")
            }
            if let mode = store.tlsMode, !["disable", "prefer", "require"].contains(mode) {
                throw .invalid("store.tlsMode", "must be disable, prefer or require")
            }
            if let lease = store.leaseSeconds, !Store.leaseSecondsRange.contains(lease) {
                let range = Store.leaseSecondsRange
                throw .invalid("store.leaseSeconds", "must be \(range.lowerBound)…\(range.upperBound) (seconds)")
            }
        default:
            throw .invalid("store.kind", "must be file or postgres")
        }
    }
}
