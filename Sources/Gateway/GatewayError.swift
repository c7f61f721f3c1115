/// Every failure the Gateway module reports, in the project's one error shape: a stable
/// ``code``, a human ``message``, the ``underlying`` error that caused it, and the context
/// its code needs: for a configuration that cannot be used (``Code/isConfiguration``, exit
/// status 78) the ``field`` at fault and the layer that set it (``source``); the admin
/// API's ``status`` and ``body``; the ``retryAfter`` of a request that got no slot at its
/// upstream.
///
/// Build one with a static factory (``invalid(_:_:)``, ``missing(_:)``,
/// ``unreadable(_:path:reason:underlying:)``, ``upstreamBusy(retryAfter:)``,
/// ``noToken(_:)``, ``reloadRefused(_:)``, ``adminRefused(status:body:)``, …) and match on
/// ``code``:
///
/// ```swift
/// do { _ = try GatewayConfiguration.load(from: data) } catch {
///     error.code         // .invalidValue
///     error.field        // "routes[1].upstream"
///     print(error)       // routes[1].upstream must be an http or https URL with a host and a port 1…65535, …
/// }
/// do { try await client.follow(path: "/auth/events") { print($0.data) } notice: { print($0) } }
/// catch let error as GatewayError where error.code == .adminRefused {
///     error.status  // 401
///     print(error)  // the admin API answered 401: {"type":"https://authgate.dev/problems/…", …}
/// }
/// ```
///
/// A configuration error's field is the JSON path (`routes[1].upstream`, `store.url`) or,
/// outside the file, the flag or variable (`--config`, `--admin`, `OTEL_TRACES_EXPORTER`,
/// `AUTHGATE_STORE_KEY`); nil only where no field applies (text that is not JSON, a stray
/// argument).
///
/// The ``description`` is the ``message``, then `(set by env NAME)` or `(set by flag
/// --name)` when a variable or a flag set the field: the sentence `authgate` prints (the
/// code is for matching, not for people), before it exits 78 for a configuration error, and
/// what a refused reload answers with. Messages are written here and name fields, paths,
/// URLs, statuses and kinds of failure, never a token, a client secret, a key, a password
/// or an `Authorization` value; the admin API's ``body`` is a problem document, which holds
/// none either. The ``underlying`` error is kept for callers that look at it (the session's
/// ``AuthCore/AuthError`` behind ``Code/noToken``) and is not part of the message.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code.
    public let code: Code
    /// The sentence users see (never a secret).
    public let message: String
    /// The field at fault, for a configuration error: as the configuration, a flag or a
    /// variable names it; nil when none applies.
    public let field: String?
    /// The variable or flag that set ``field``, when one did (the file and the default are
    /// not named: the message's field is where to look).
    public let source: ConfigurationSource?
    /// The error that caused this one, when there was one.
    public let underlying: (any Error & Sendable)?
    /// The HTTP status the admin API answered with, for ``Code/adminRefused``.
    public let status: Int?
    /// The body the admin API answered with, as text (a problem document, never a token),
    /// for ``Code/adminRefused``.
    public let body: String?
    /// Whole seconds (at least 1) a client should wait before it tries again, for
    /// ``Code/upstreamBusy`` and ``Code/upstreamShed``.
    public let retryAfter: Int?

    /// Creates an error whose `message` is the whole sentence; prefer the static factories,
    /// which write the sentence and fill in the context.
    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil, status: Int? = nil,
        body: String? = nil, retryAfter: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
        self.field = nil
        self.source = nil
    }

    /// Creates a configuration error whose `message` is the whole sentence; prefer the
    /// static factories, which write the sentence from the field.
    public init(
        _ code: Code, field: String?, _ message: String, underlying: (any Error & Sendable)? = nil,
        source: ConfigurationSource? = nil
    ) {
        self.code = code
        self.field = field
        self.message = message
        self.underlying = underlying
        self.source = source
        self.status = nil
        self.body = nil
        self.retryAfter = nil
    }

    /// Equal when everything but ``underlying`` is equal (an error is not `Equatable`).
    public static func == (lhs: GatewayError, rhs: GatewayError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.field == rhs.field && lhs.source == rhs.source
            && lhs.status == rhs.status && lhs.body == rhs.body && lhs.retryAfter == rhs.retryAfter
    }

    /// The ``message``, then `(set by env NAME)` or `(set by flag --name)` when ``source``
    /// is a variable or a flag.
    public var description: String {
        guard let source, source.isVariableOrFlag else { return message }
        return "\(message) (set by \(source))"
    }

    /// The configuration a reload refused, for ``Code/reloadRefused``: the ``underlying``
    /// configuration error, which names the field at fault.
    public var configurationError: GatewayError? {
        (underlying as? GatewayError).flatMap { $0.code.isConfiguration ? $0 : nil }
    }
}
