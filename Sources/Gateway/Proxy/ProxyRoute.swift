public import HTTPWire

/// A path prefix forwarded to an upstream.
public struct ProxyRoute: Sendable, Equatable {
    /// The request path prefix this route serves (`/api/`).
    public var prefix: String
    /// The upstream base URL (`http://127.0.0.1:9000` or `https://api.example.com/v1`).
    public var upstream: UpstreamBase
    /// Whether the prefix is removed before the path is appended to the upstream base.
    public var stripPrefix: Bool
    /// Fields set on every request sent upstream, replacing any the client sent.
    public var injectHeaders: HTTPHeaders
    /// Whether the route needs the session's token (SEEDS row 5); public routes pass
    /// through untouched (guest mode, row 12).
    public var requiresAuthentication: Bool
    /// Whether a client's own `Authorization` goes upstream. Default: stripped on
    /// authenticated routes (the session's token replaces it), passed on public ones.
    public var forwardClientAuthorization: Bool
    /// The session whose token an authenticated route gets.
    public var session: String
    /// At most this many authenticated requests at the upstream at once (nil: no bound);
    /// the rest wait in AuthGate, and take the token when they leave (``InFlightLimiter``).
    public var maxInFlight: Int?
    /// The longest an authenticated request waits for a slot before a 503.
    public var queueTimeout: Duration

    /// Creates a route.
    public init(
        prefix: String, upstream: UpstreamBase, stripPrefix: Bool = false, injectHeaders: HTTPHeaders = HTTPHeaders(),
        requiresAuthentication: Bool = false, forwardClientAuthorization: Bool? = nil, session: String = "default",
        maxInFlight: Int? = nil, queueTimeout: Duration = .seconds(30)
    ) {
        self.maxInFlight = maxInFlight
        self.queueTimeout = queueTimeout
        self.session = session
        self.prefix = prefix
        self.upstream = upstream
        self.stripPrefix = stripPrefix
        self.injectHeaders = injectHeaders
        self.requiresAuthentication = requiresAuthentication
        self.forwardClientAuthorization = forwardClientAuthorization ?? !requiresAuthentication
    }

    /// Whether `path` is under this route's prefix (at a segment boundary).
    /// Compares bytes: paths are matched as sent, with no Unicode normalisation.
    public func matches(_ path: Substring) -> Bool {
        var prefix = self.prefix
        var path = path
        return prefix.withUTF8 { pre in
            path.withUTF8 { p in
                guard p.count >= pre.count, pre.elementsEqual(UnsafeBufferPointer(rebasing: p[..<pre.count])) else { return false }
                return pre.last == UInt8(ascii: "/") || p.count == pre.count || p[pre.count] == UInt8(ascii: "/")
            }
        }
    }

    /// The upstream URL for an origin-form `pathAndQuery` that matches this route.
    public func upstreamURL(path: Substring, query: Substring?) -> String {
        var url = upstream.urlBase
        let rest = stripPrefix ? Substring(path.utf8.dropFirst(prefix.utf8.count)) : path
        if rest.utf8.first != UInt8(ascii: "/") { url += "/" }
        url += rest
        if let query {
            url += "?"
            url += query
        }
        return url
    }
}

/// A parsed upstream base URL.
public struct UpstreamBase: Sendable, Equatable {
    /// `http` or `https`.
    public let scheme: String
    /// `host[:port]`, as the `Host` header sent upstream.
    public let authority: String
    /// The path prefix without a trailing slash (`""` or `/v1`).
    public let basePath: String

    /// `scheme://authority`.
    public var origin: String { "\(scheme)://\(authority)" }
    /// `scheme://authority/basePath`, the start of every URL sent to this upstream.
    public let urlBase: String

    /// Parses `http[s]://host[:port][/path]`; nil for anything else.
    public init?(_ text: String) {
        let scheme: String
        let rest: Substring
        if text.hasPrefix("http://") {
            scheme = "http"
            rest = text.dropFirst(7)
        } else if text.hasPrefix("https://") {
            scheme = "https"
            rest = text.dropFirst(8)
        } else {
            return nil
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("?"), !authority.contains("#") else { return nil }
        var path = String(rest[slash...])
        guard !path.contains("?"), !path.contains("#") else { return nil }
        while path.hasSuffix("/") { path.removeLast() }
        self.scheme = scheme
        self.authority = String(authority)
        self.basePath = path
        self.urlBase = "\(scheme)://\(authority)\(path)"
    }
}
