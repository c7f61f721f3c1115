/// Why the PostgreSQL store could not start or answer: a stable code, the configuration
/// field at fault when there is one, and a message that never holds a password or a token.
public struct PostgresStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A setting is malformed (before any connection).
        public static let invalidConfiguration = Code("invalid_configuration")
        /// The server did not answer (refused, unreachable, timed out).
        public static let unreachable = Code("unreachable")
        /// The server refused the role or its password.
        public static let authenticationFailed = Code("authentication_failed")
        /// The database does not exist.
        public static let databaseMissing = Code("database_missing")
        /// The role lacks a right the store needs (create the table, read or write it).
        public static let permissionDenied = Code("permission_denied")
        /// TLS was required and could not be had.
        public static let tlsFailed = Code("tls_failed")
        /// The table's schema is newer than this build knows.
        public static let schemaTooNew = Code("schema_too_new")
        /// Any other failure of the server or the connection.
        public static let unavailable = Code("unavailable")

        /// The code's name, e.g. `permission_denied`.
        public var description: String { name }
    }

    /// The stable code.
    public let code: Code
    /// The configuration field at fault (`store.url`, `store.passwordFile`, `store.table`).
    public let field: String?
    /// What went wrong, naming no secret.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, field: String? = nil, _ message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// `field: message`, or the message alone.
    public var description: String { field.map { "\($0): \(message)" } ?? message }
}
