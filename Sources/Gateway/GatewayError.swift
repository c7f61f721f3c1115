/// Every failure the Gateway module reports at run time, in the project's one error shape: a
/// stable ``code``, a human ``message``, the ``underlying`` error that caused it, and the
/// context its code needs (the admin API's ``status`` and ``body``, the ``retryAfter`` of
/// a request that got no slot at its upstream). A configuration that cannot be used is a
/// ``ConfigurationError`` instead, with its field (and exit status 78).
///
/// Build one with a static factory (``upstreamBusy(retryAfter:)``, ``noToken(_:)``,
/// ``reloadRefused(_:)``, ``issuerUnusable(_:underlying:)``, ``adminRefused(status:body:)``,
/// …) and match on ``code``:
///
/// ```swift
/// do { try await client.follow(path: "/auth/events") { print($0.data) } notice: { print($0) } }
/// catch let error as GatewayError where error.code == .adminRefused {
///     error.status  // 401
///     print(error)  // the admin API answered 401: {"type":"https://authgate.dev/problems/…", …}
/// }
/// ```
///
/// The ``description`` is the ``message``: the sentence `authgate` prints (the code is for
/// matching, not for people). Messages are written here and name fields, URLs, statuses and
/// kinds of failure, never a token, a client secret, a key or an `Authorization` value; the
/// admin API's ``body`` is a problem document, which holds none either. The ``underlying``
/// error is kept for callers that look at it (the session's ``AuthCore/AuthError`` behind
/// ``Code/noToken``) and is not part of the message.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code.
    public let code: Code
    /// The sentence users see (never a secret).
    public let message: String
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
    }

    /// Equal when everything but ``underlying`` is equal (an error is not `Equatable`).
    public static func == (lhs: GatewayError, rhs: GatewayError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.status == rhs.status && lhs.body == rhs.body
            && lhs.retryAfter == rhs.retryAfter
    }

    /// The ``message``.
    public var description: String { message }

    /// The configuration a reload refused, for ``Code/reloadRefused``: the ``underlying``
    /// error, which names the field at fault.
    public var configurationError: ConfigurationError? { underlying as? ConfigurationError }
}
