/// The scheme, host and port of an upstream, parsed once, and the key of the loop client's
/// connection pools (``UpstreamClient/http1Pools``).
///
/// A proxy route makes its own when the configuration is loaded, so that a request to it
/// carries only its path and query (``UpstreamRequest/Destination/origin(_:target:)``): the
/// loop's HTTP/1.1 client finds its connection pool by it with no URL parsed, and a URL is
/// put together only for libcurl. Its hash is worked out once, when it is made, so finding
/// a pool costs no hashing of its strings per request.
///
/// ```swift
/// let origin = UpstreamOrigin("http://127.0.0.1:9000")!
/// let request = UpstreamRequest(method: "GET", destination: .origin(origin, target: "/orders?id=1"))
/// ```
public struct UpstreamOrigin: Hashable, Sendable {
    /// Whether the scheme is `https`.
    public let isHTTPS: Bool
    /// The host: a name, an IPv4 address or an IPv6 address without brackets.
    public let host: String
    /// The port: the one the authority names, else 80 for `http` and 443 for `https`.
    public let port: Int
    /// `host[:port]` as written, for the `Host` field.
    public let authority: String
    /// The hash of the scheme, host, port and authority, made once.
    private let hash: Int

    /// `http` or `https`.
    public var scheme: String { isHTTPS ? "https" : "http" }
    /// `scheme://authority`, the start of the URL libcurl is given.
    ///
    /// Made when asked for, not stored: a request carries its origin to the upstream client,
    /// and a copy of a host and authority short enough to be held inline retains nothing.
    public var urlPrefix: String { (isHTTPS ? "https://" : "http://") + authority }

    /// An origin of these parts.
    init(isHTTPS: Bool, host: String, port: Int, authority: String) {
        self.isHTTPS = isHTTPS
        self.host = host
        self.port = port
        self.authority = authority
        var hasher = Hasher()
        hasher.combine(isHTTPS)
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(authority)
        hash = hasher.finalize()
    }

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
            let origin = authority.withUTF8({ Self.make(authority: $0, isHTTPS: isHTTPS) })
        else { return nil }
        self = origin
    }

    /// The absolute URL of `target` (a path, with its query, starting with `/`) on this
    /// origin, made in one allocation.
    public func url(_ target: String) -> String {
        var url = isHTTPS ? "https://" : "http://"
        url.reserveCapacity(8 + authority.utf8.count + target.utf8.count)
        url += authority
        url += target
        return url
    }

    /// Feeds the hash made at init.
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// Same scheme, host, port and authority (the hash is theirs).
    public static func == (a: UpstreamOrigin, b: UpstreamOrigin) -> Bool {
        a.hash == b.hash && a.port == b.port && a.isHTTPS == b.isHTTPS && a.host == b.host && a.authority == b.authority
    }

    /// The origin and request target of a plain `http://` `url`, what the loop's HTTP/1.1
    /// client needs of a request given as a URL; nil when the URL is not one that client
    /// serves: not `http://`, with user information, or without a valid host or port. The
    /// fragment is not sent; an empty path is `/`. Pure.
    static func parse(_ url: String) -> (origin: UpstreamOrigin, target: String)? {
        var url = url
        return url.withUTF8 { b -> (UpstreamOrigin, String)? in
            let scheme: StaticString = "http://"
            guard b.count > scheme.utf8CodeUnitCount else { return nil }
            for i in 0..<scheme.utf8CodeUnitCount where b[i] != scheme.utf8Start[i] { return nil }
            let start = scheme.utf8CodeUnitCount
            var end = start
            while end < b.count, b[end] != 0x2F, b[end] != 0x3F, b[end] != 0x23 { end += 1 }
            var fragment = end
            while fragment < b.count, b[fragment] != 0x23 { fragment += 1 }
            guard let origin = make(authority: UnsafeBufferPointer(rebasing: b[start..<end]), isHTTPS: false) else {
                return nil
            }
            let path = UnsafeBufferPointer(rebasing: b[end..<fragment])
            let target = path.first == 0x2F ? String(decoding: path, as: UTF8.self) : "/" + String(decoding: path, as: UTF8.self)
            return (origin, target)
        }
    }

    /// The origin of an authority (`host`, `host:port`, `[v6]:port`), the scheme's default
    /// port (80, or 443 for `https`) when it names none; nil for one with user information,
    /// an empty host, a bad port or a byte that cannot be in it.
    static func make(authority a: UnsafeBufferPointer<UInt8>, isHTTPS: Bool) -> UpstreamOrigin? {
        guard !a.isEmpty, a.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x40 }) else { return nil }
        var hostRange = 0..<a.count
        var portStart: Int?
        if a[0] == 0x5B {
            guard let close = a.firstIndex(of: 0x5D) else { return nil }
            hostRange = 1..<close
            if close + 1 < a.count {
                guard a[close + 1] == 0x3A else { return nil }
                portStart = close + 2
            }
        } else if let colon = a.firstIndex(of: 0x3A) {
            hostRange = 0..<colon
            portStart = colon + 1
        }
        guard !hostRange.isEmpty else { return nil }
        var port = isHTTPS ? 443 : 80
        if let portStart {
            let digits = a[portStart...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            port = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard (1...65535).contains(port) else { return nil }
        }
        return UpstreamOrigin(
            isHTTPS: isHTTPS, host: String(decoding: UnsafeBufferPointer(rebasing: a[hostRange]), as: UTF8.self),
            port: port, authority: String(decoding: a, as: UTF8.self))
    }
}
