/// Where a configuration value came from, for `authgate serve --print-config` and for the
/// errors about a value: the file, an `AUTHGATE_*` environment variable, a flag, or nowhere
/// (the default applies).
public enum ConfigurationSource: Sendable, Equatable, CustomStringConvertible {
    /// The JSON configuration file at this path.
    case file(String)
    /// This environment variable.
    case environment(String)
    /// This command-line flag.
    case flag(String)
    /// Not set: the field's default.
    case defaultValue

    /// Layers in the order they apply; a later one overrides an earlier one.
    var precedence: Int {
        switch self {
        case .defaultValue: 0
        case .file: 1
        case .environment: 2
        case .flag: 3
        }
    }

    /// The variable's or the flag's name (`AUTHGATE_LOOPS`, `--loops`); nil for the file and the default.
    var layerName: String? {
        switch self {
        case .environment(let name), .flag(let name): name
        case .file, .defaultValue: nil
        }
    }

    /// `file /etc/authgate/authgate.json`, `env AUTHGATE_LOOPS`, `flag --loops`, `default`.
    public var description: String {
        switch self {
        case .file(let path): "file \(path)"
        case .environment(let name): "env \(name)"
        case .flag(let name): "flag \(name)"
        case .defaultValue: "default"
        }
    }
}
