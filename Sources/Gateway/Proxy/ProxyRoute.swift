public import AuthCore
public import HTTPWire
public import Runtime

/// A path prefix forwarded to an upstream.
///
/// A value, its settings held in one shared immutable box: a copy (the plan of every
/// request carries its route) is one retain, not one for each string and list inside.
public struct ProxyRoute: Sendable, Equatable {
    /// The settings, as stored.
    private struct Settings: Sendable, Equatable {
        var prefix: String
        var upstream: UpstreamOrigin
        var upstreamPath: String
        /// `Host: authority` of the upstream, made once.
        var hostField: HTTPHeaders
        var stripPrefix: Bool
        var injectHeaders: HTTPHeaders
        var requiresAuthentication: Bool
        var forwardClientAuthorization: Bool
        var session: String
        var maxInFlight: Int?
        var queueTimeout: Duration
        var callers: CallerRule?
        var adaptiveLimit: Bool?
        var clientIdentity: TLSClientIdentity?
    }

    /// Never changed once made: a setter puts a changed copy in a new box.
    private final class Box: Sendable {
        let settings: Settings
        init(_ settings: Settings) { self.settings = settings }
    }

    private var box: Box

    private mutating func change(_ edit: (inout Settings) -> Void) {
        var s = box.settings
        edit(&s)
        box = Box(s)
    }

    /// The request path prefix this route serves (`/api/`).
    public var prefix: String {
        get { box.settings.prefix }
        set { change { $0.prefix = newValue } }
    }
    /// The upstream's origin (`http://127.0.0.1:9000`, `https://api.example.com`): where
    /// the route's requests are sent.
    public var upstream: UpstreamOrigin {
        get { box.settings.upstream }
        set {
            change {
                $0.upstream = newValue
                $0.hostField = ForwardedHeaders.hostField(newValue.authority)
            }
        }
    }
    /// The path every request target sent upstream starts with, without a trailing slash
    /// (`""`, or `/v1` for the upstream `https://api.example.com/v1`).
    public var upstreamPath: String {
        get { box.settings.upstreamPath }
        set { change { $0.upstreamPath = Self.trimmed(newValue) } }
    }
    /// `Host: authority`, the field every request to the upstream carries, made once.
    var hostField: HTTPHeaders { box.settings.hostField }
    /// Whether the prefix is removed before the path is appended to ``upstreamPath``.
    public var stripPrefix: Bool {
        get { box.settings.stripPrefix }
        set { change { $0.stripPrefix = newValue } }
    }
    /// Fields set on every request sent upstream, replacing any the client sent.
    public var injectHeaders: HTTPHeaders {
        get { box.settings.injectHeaders }
        set { change { $0.injectHeaders = newValue } }
    }
    /// Whether the route needs the session's token (SEEDS row 5); public routes pass
    /// through untouched (guest mode, row 12).
    public var requiresAuthentication: Bool {
        get { box.settings.requiresAuthentication }
        set { change { $0.requiresAuthentication = newValue } }
    }
    /// Whether a client's own `Authorization` goes upstream. Default: stripped on
    /// authenticated routes (the session's token replaces it), passed on public ones.
    public var forwardClientAuthorization: Bool {
        get { box.settings.forwardClientAuthorization }
        set { change { $0.forwardClientAuthorization = newValue } }
    }
    /// The session whose token an authenticated route gets.
    public var session: String {
        get { box.settings.session }
        set { change { $0.session = newValue } }
    }
    /// At most this many authenticated requests at the upstream at once (nil: no bound);
    /// the rest wait in AuthGate, and take the token when they leave (``InFlightLimiter``).
    public var maxInFlight: Int? {
        get { box.settings.maxInFlight }
        set { change { $0.maxInFlight = newValue } }
    }
    /// The longest an authenticated request waits for a slot before a 503.
    public var queueTimeout: Duration {
        get { box.settings.queueTimeout }
        set { change { $0.queueTimeout = newValue } }
    }

    /// Whether an adaptive limit per upstream origin bounds the route's requests at the
    /// upstream (``AdaptiveLimit``), shared with the other adaptive routes to that origin;
    /// nil: on for an authenticated route without ``maxInFlight``, off otherwise. With
    /// ``maxInFlight`` too, that is the most the adaptive limit grows to.
    public var adaptiveLimit: Bool? {
        get { box.settings.adaptiveLimit }
        set { change { $0.adaptiveLimit = newValue } }
    }

    /// Whether the route's requests go through the adaptive limit of their origin.
    public var isAdaptive: Bool {
        adaptiveLimit ?? (requiresAuthentication && maxInFlight == nil)
    }

    /// The callers the route serves; nil: every caller that reaches the listener.
    public var callers: CallerRule? {
        get { box.settings.callers }
        set { change { $0.callers = newValue } }
    }

    /// The certificate shown to an `https` upstream that asks for one (mutual TLS): the
    /// route's own, or its session's when the session's tokens may be bound to it.
    public var clientIdentity: TLSClientIdentity? {
        get { box.settings.clientIdentity }
        set { change { $0.clientIdentity = newValue } }
    }

    /// The identity of this route's settings, shared by its copies (a request's plan carries
    /// a copy of the table's): a key compared without hashing or reading the prefix.
    var identity: ObjectIdentifier { ObjectIdentifier(box) }

    /// Whether both routes have the same settings.
    public static func == (lhs: ProxyRoute, rhs: ProxyRoute) -> Bool {
        lhs.box === rhs.box || lhs.box.settings == rhs.box.settings
    }

    /// Creates a route to `upstream`, whose requests' targets start with `upstreamPath`
    /// (trailing slashes dropped).
    public init(
        prefix: String, upstream: UpstreamOrigin, upstreamPath: String = "", stripPrefix: Bool = false,
        injectHeaders: HTTPHeaders = HTTPHeaders(),
        requiresAuthentication: Bool = false, forwardClientAuthorization: Bool? = nil, session: String = "default",
        maxInFlight: Int? = nil, queueTimeout: Duration = .seconds(10), callers: CallerRule? = nil,
        adaptiveLimit: Bool? = nil, clientIdentity: TLSClientIdentity? = nil
    ) {
        box = Box(
            Settings(
                prefix: prefix, upstream: upstream, upstreamPath: Self.trimmed(upstreamPath),
                hostField: ForwardedHeaders.hostField(upstream.authority), stripPrefix: stripPrefix, injectHeaders: injectHeaders,
                requiresAuthentication: requiresAuthentication,
                forwardClientAuthorization: forwardClientAuthorization ?? !requiresAuthentication, session: session,
                maxInFlight: maxInFlight, queueTimeout: queueTimeout, callers: callers, adaptiveLimit: adaptiveLimit,
                clientIdentity: clientIdentity))
    }

    /// Whether `path` is under this route's prefix (at a segment boundary).
    /// Compares bytes: paths are matched as sent, with no Unicode normalisation.
    public func matches(_ path: Substring) -> Bool {
        var prefix = self.prefix
        var path = path
        return prefix.withUTF8 { pre in
            path.withUTF8 { p in
                guard p.count >= pre.count, pre.elementsEqual(UnsafeBufferPointer(rebasing: p[..<pre.count])) else {
                    return false
                }
                return pre.last == UInt8(ascii: "/") || p.count == pre.count || p[pre.count] == UInt8(ascii: "/")
            }
        }
    }

    /// The upstream URL for a `path` (and `query`) that matches this route: the upstream's
    /// origin and ``upstreamTarget(path:query:)``.
    public func upstreamURL(path: Substring, query: Substring?) -> String {
        upstream.url(upstreamTarget(path: path, query: query))
    }

    /// ``upstreamTarget(path:query:)`` for a parsed `target`, put together from its bytes in
    /// one allocation.
    func upstreamTarget(for target: RequestTarget) -> String {
        var base = upstreamPath
        return base.withUTF8 { base in
            target.withPathAndQuery(dropping: stripPrefix ? prefix.utf8.count : 0) { rest, query in
                let slash = rest.first != UInt8(ascii: "/")
                let count = base.count + (slash ? 1 : 0) + rest.count + (query?.count ?? 0)
                return String(unsafeUninitializedCapacity: count) { out in
                    var at = out.initialize(fromContentsOf: base)
                    if slash {
                        out[at] = UInt8(ascii: "/")
                        at += 1
                    }
                    at += UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(fromContentsOf: rest)
                    if let query { at += UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(fromContentsOf: query) }
                    return at
                }
            }
        }
    }

    /// The request target sent upstream for a `path` (and `query`) that matches this route:
    /// ``upstreamPath``, then the path (without the prefix when ``stripPrefix``),
    /// then `?` and the query, bytes as the client sent them.
    public func upstreamTarget(path: Substring, query: Substring?) -> String {
        let rest = stripPrefix ? Substring(path.utf8.dropFirst(prefix.utf8.count)) : path
        var target = upstreamPath
        target.reserveCapacity(target.utf8.count + rest.utf8.count + 2 + (query?.utf8.count ?? 0))
        if rest.utf8.first != UInt8(ascii: "/") { target += "/" }
        target += rest
        if let query {
            target += "?"
            target += query
        }
        return target
    }
}

extension ProxyRoute {
    /// The origin and path of an upstream base URL, `http[s]://host[:port][/path]`, the path
    /// without a trailing slash; nil for anything else: another scheme, user information, an
    /// empty host, a port outside 1…65535, a query or a fragment.
    ///
    /// ```swift
    /// let (origin, path) = ProxyRoute.parseUpstream("https://api.example.com/v1/")!
    /// // origin.urlPrefix == "https://api.example.com", path == "/v1"
    /// ```
    public static func parseUpstream(_ text: String) -> (origin: UpstreamOrigin, path: String)? {
        let schemeEnd: Int
        if text.hasPrefix("http://") {
            schemeEnd = 7
        } else if text.hasPrefix("https://") {
            schemeEnd = 8
        } else {
            return nil
        }
        let rest = text.utf8.dropFirst(schemeEnd)
        let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        guard let origin = UpstreamOrigin(String(text[..<slash])) else { return nil }
        let path = String(text[slash...])
        guard !path.contains("?"), !path.contains("#") else { return nil }
        return (origin, trimmed(path))
    }

    /// `path` without its trailing slashes.
    fileprivate static func trimmed(_ path: String) -> String {
        var path = path
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
