extension ConfigurationError {
    /// A stable, machine-readable code, such as `invalid-value` or `unknown-field`. Its
    /// ``description`` never changes for a code that exists. The set is closed: the codes
    /// are the static members below; match them with `==` or `case`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidJSON = "invalid-json"
            case missingField = "missing-field"
            case unknownField = "unknown-field"
            case invalidValue = "invalid-value"
            case conflict = "conflict"
            case unreadableFile = "unreadable-file"
            case unusablePath = "unusable-path"
            case unsafePermissions = "unsafe-permissions"
            case secretExposed = "secret-exposed"
            case unsupported = "unsupported"
            case storeUnavailable = "store-unavailable"
            case other = "other"
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The code as text, e.g. `invalid-value`.
        public var description: String { base.rawValue }

        /// The text is not strict JSON (the file, or a variable's or flag's `{…}`/`[…]`
        /// value), or the file is JSON but not an object.
        public static let invalidJSON = Code(.invalidJSON)
        /// A field that must be set is not (`missing field stateDirectory`, `store.url is required …`).
        public static let missingField = Code(.missingField)
        /// A key, `AUTHGATE_*` variable or flag names no configuration field.
        public static let unknownField = Code(.unknownField)
        /// A value has the wrong type, is out of range or malformed; or an argument is not
        /// a configuration flag.
        public static let invalidValue = Code(.invalidValue)
        /// Two settings cannot go together, or two that must differ are the same (two
        /// listeners on one port, a route prefix given twice).
        public static let conflict = Code(.conflict)
        /// A file the configuration names cannot be read, or does not hold what it must
        /// (a secret file that is empty, not UTF-8 or on more than one line; a key file).
        public static let unreadableFile = Code(.unreadableFile)
        /// A path the configuration names cannot be used as it must be: the state directory
        /// is not a directory or cannot be created or examined, a Unix socket's directory
        /// does not exist, the key file cannot be examined.
        public static let unusablePath = Code(.unusablePath)
        /// The state directory or the key file lets its group or others in.
        public static let unsafePermissions = Code(.unsafePermissions)
        /// A secret is given where it would leak (a flag, a URL's password): it belongs in a file.
        public static let secretExposed = Code(.secretExposed)
        /// The setting is well formed but this build or this process cannot honour it (a
        /// Unix socket for the proxy, OTLP over gRPC, a new session on reload).
        public static let unsupported = Code(.unsupported)
        /// The configured token store refused at start (unreachable, a refused password,
        /// missing rights, a newer schema); ``ConfigurationError/underlying`` is the store's error.
        public static let storeUnavailable = Code(.storeUnavailable)
        /// Reading the configuration failed for a reason none of the codes above names;
        /// ``ConfigurationError/underlying`` is the error.
        public static let other = Code(.other)

        /// Every code, in the order above.
        public static let all: [Code] = [
            .invalidJSON, .missingField, .unknownField, .invalidValue, .conflict, .unreadableFile, .unusablePath,
            .unsafePermissions, .secretExposed, .unsupported, .storeUnavailable, .other,
        ]
    }
}
