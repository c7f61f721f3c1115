extension ConfigurationError {
    /// A stable, machine-readable code, such as `invalid-value` or `unknown-field`. Its raw
    /// value never changes for a code that exists.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The text is not strict JSON (the file, or a variable's or flag's `{…}`/`[…]`
        /// value), or the file is JSON but not an object.
        case invalidJSON = "invalid-json"
        /// A field that must be set is not (`missing field stateDirectory`, `store.url is required …`).
        case missingField = "missing-field"
        /// A key, `AUTHGATE_*` variable or flag names no configuration field.
        case unknownField = "unknown-field"
        /// A value has the wrong type, is out of range or malformed; or an argument is not
        /// a configuration flag.
        case invalidValue = "invalid-value"
        /// Two settings cannot go together, or two that must differ are the same (two
        /// listeners on one port, a route prefix given twice).
        case conflict = "conflict"
        /// A file the configuration names cannot be read, or does not hold what it must
        /// (a secret file that is empty, not UTF-8 or on more than one line; a key file).
        case unreadableFile = "unreadable-file"
        /// A path the configuration names cannot be used as it must be: the state directory
        /// is not a directory or cannot be created or examined, a Unix socket's directory
        /// does not exist, the key file cannot be examined.
        case unusablePath = "unusable-path"
        /// The state directory or the key file lets its group or others in.
        case unsafePermissions = "unsafe-permissions"
        /// A secret is given where it would leak (a flag, a URL's password): it belongs in a file.
        case secretExposed = "secret-exposed"
        /// The setting is well formed but this build or this process cannot honour it (a
        /// Unix socket for the proxy, OTLP over gRPC, a new session on reload).
        case unsupported = "unsupported"
        /// The configured token store refused at start (unreachable, a refused password,
        /// missing rights, a newer schema); ``ConfigurationError/underlying`` is the store's error.
        case storeUnavailable = "store-unavailable"
        /// Reading the configuration failed for a reason none of the codes above names;
        /// ``ConfigurationError/underlying`` is the error.
        case other = "other"

        /// The code as text, e.g. `invalid-value`.
        public var description: String { rawValue }
    }
}
