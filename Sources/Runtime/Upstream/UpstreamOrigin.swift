/// The scheme, host and port of an upstream, parsed once — a proxy route makes its own when
/// the configuration is loaded — so that a request to it carries only its path and query
/// (``UpstreamRequest/Destination/origin(_:target:)``): the loop's HTTP/1.1 client finds its
/// connection pool by it with no URL parsed, and a URL is put together only for libcurl.
///
/// ```swift
/// let origin = UpstreamOrigin("http://127.0.0.1:9000")!
/// let request = UpstreamRequest(method: "GET", destination: .origin(origin, target: "/orders?id=1"))
/// ```
public struct UpstreamOrigin: Hashable, Sendable {
    /// Whether the scheme is `https`.
    public let isHTTPS: Bool
    /// Host, port and authority; the loop client's pool key.
    let endpoint: HTTP1Origin
    /// `scheme://authority`, the start of the URL libcurl is given.
    public let urlPrefix: String

    /// `http` or `https`.
    public var scheme: String { isHTTPS ? "https" : "http" }
    /// The host: a name, an IPv4 address or an IPv6 address without brackets.
    public var host: String { endpoint.host }
    /// The port: the one the authority names, else 80 for `http` and 443 for `https`.
    public var port: Int { endpoint.port }
    /// `host[:port]` as written, for the `Host` field.
    public var authority: String { endpoint.authority }

    /// Parses `http://authority` or `https://authority`, where the authority is `host`,
    /// `host:port` or `[v6]:port`, with nothing after it. Nil for another scheme, user
    /// information, an empty host, a port outside 1…65535, a path, a query or a fragment.
    public init?(_ text: String) {
        let isHTTPS: Bool
        if text.hasPrefix("https://") {
            isHTTPS = true
        } else if text.hasPrefix("http://") {
            isHTTPS = false
        } else {
            return nil
        }
        var authority = String(text.utf8.dropFirst(isHTTPS ? 8 : 7))!
        guard !authority.utf8.contains(where: { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 }),
            let endpoint = authority.withUTF8({ HTTP1Origin.make(authority: $0, defaultPort: isHTTPS ? 443 : 80) })
        else { return nil }
        self.isHTTPS = isHTTPS
        self.endpoint = endpoint
        self.urlPrefix = isHTTPS ? "https://" + endpoint.authority : "http://" + endpoint.authority
    }

    /// The absolute URL of `target` (a path, with its query, starting with `/`) on this origin.
    public func url(_ target: String) -> String { urlPrefix + target }
}
