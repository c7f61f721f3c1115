/// A configuration that cannot be used, in the project's one error shape: a stable
/// ``code``, the ``field`` at fault, a human ``message``, the ``underlying`` error that
/// caused it, and the layer that set the field (``source``) when a variable or a flag did.
///
/// Build one with a static factory (``invalid(_:_:)``, ``missing(_:)``,
/// ``unknownField(_:)``, ``invalidJSON(_:underlying:)``,
/// ``unreadable(_:path:reason:underlying:)``, ``at(_:_:_:underlying:)``, …) and match on
/// ``code`` and ``field``:
///
/// ```swift
/// do { _ = try GatewayConfiguration.load(from: data) } catch let error as ConfigurationError {
///     error.code         // .invalidValue
///     error.field        // "routes[1].upstream"
///     print(error)       // routes[1].upstream must be an http or https URL with a host and a port 1…65535, …
/// }
/// ```
///
/// The field is the JSON path (`routes[1].upstream`, `store.url`) or, outside the file, the
/// flag or variable (`--config`, `--admin`, `OTEL_TRACES_EXPORTER`, `AUTHGATE_STORE_KEY`);
/// nil only where no field applies (text that is not JSON, a stray argument).
///
/// The ``description`` is what `authgate serve` prints before it exits 78 and what a
/// refused reload answers with: the ``message``, then `(set by env NAME)` or
/// `(set by flag --name)` when a variable or a flag set the field. Messages are written
/// here and name fields, paths and kinds of value, never a value that may be a secret: no
/// secret file's content, no password of a URL, no key.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code.
    public let code: Code
    /// The field at fault, as the configuration, a flag or a variable names it; nil when none applies.
    public let field: String?
    /// The sentence users see, naming the field; never a secret.
    public let message: String
    /// The error that caused this one, when there was one.
    public let underlying: (any Error & Sendable)?
    /// The variable or flag that set ``field``, when one did (the file and the default are
    /// not named: the message's field is where to look).
    public let source: ConfigurationSource?

    /// Creates an error whose `message` is the whole sentence; prefer the static factories,
    /// which write the sentence from the field.
    public init(
        _ code: Code, field: String?, _ message: String, underlying: (any Error & Sendable)? = nil,
        source: ConfigurationSource? = nil
    ) {
        self.code = code
        self.field = field
        self.message = message
        self.underlying = underlying
        self.source = source
    }

    /// Equal when everything but ``underlying`` is equal (an error is not `Equatable`).
    public static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool {
        lhs.code == rhs.code && lhs.field == rhs.field && lhs.message == rhs.message && lhs.source == rhs.source
    }

    /// The ``message``, then `(set by env NAME)` or `(set by flag --name)` when ``source``
    /// is a variable or a flag.
    public var description: String {
        guard let source, source.isVariableOrFlag else { return message }
        return "\(message) (set by \(source))"
    }

    /// This error attributed to the layer that set its field (a variable or a flag; any
    /// other source leaves it as it is).
    public func attributed(to source: ConfigurationSource) -> ConfigurationError {
        guard source.isVariableOrFlag else { return self }
        return ConfigurationError(code, field: field, message, underlying: underlying, source: source)
    }

    /// This error as met at `field` (a check run for it that does not know its name):
    /// `name: <this description>`, `name` being `field` unless given, with this code and
    /// this error underlying.
    public func prefixed(with field: String, named name: String? = nil) -> ConfigurationError {
        ConfigurationError(code, field: field, "\(name ?? field): \(description)", underlying: self)
    }
}

extension ConfigurationSource {
    /// Whether an `AUTHGATE_*` variable or a flag set the value (the layers an error names).
    fileprivate var isVariableOrFlag: Bool {
        switch self {
        case .environment, .flag: true
        case .file, .defaultValue: false
        }
    }
}
