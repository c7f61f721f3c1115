/// Where a plain `http://` URL points and what to send as its request target: the part of
/// an upstream URL the loop's own HTTP/1.1 client needs, and the key of its connection pool
/// (``UpstreamClient/http1Pools``). Pure.
///
/// Its hash is worked out once, when it is made: a route's origin is made at configuration
/// load, so finding its pool costs no hashing of its strings per request.
struct HTTP1Origin: Hashable, Sendable {
    /// The host: a name, an IPv4 address or an IPv6 address without brackets.
    let host: String
    /// The port (80 when the URL names none).
    let port: Int
    /// `host:port` as the URL wrote it, for the `Host` field.
    let authority: String
    /// The hash of the three, made once.
    private let hash: Int

    /// An origin of these parts.
    init(host: String, port: Int, authority: String) {
        self.host = host
        self.port = port
        self.authority = authority
        var hasher = Hasher()
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(authority)
        hash = hasher.finalize()
    }

    /// Feeds the hash made at init.
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// Same host, port and authority (the hash is theirs).
    static func == (a: HTTP1Origin, b: HTTP1Origin) -> Bool {
        a.hash == b.hash && a.port == b.port && a.host == b.host && a.authority == b.authority
    }

    /// The origin and request target of `url`, or nil when the URL is not one this client
    /// serves: not `http://`, with user information, or without a valid host or port.
    /// The fragment is not sent; an empty path is `/`.
    static func parse(_ url: String) -> (origin: HTTP1Origin, target: String)? {
        var url = url
        return url.withUTF8 { b -> (HTTP1Origin, String)? in
            let scheme: StaticString = "http://"
            guard b.count > scheme.utf8CodeUnitCount else { return nil }
            for i in 0..<scheme.utf8CodeUnitCount where b[i] != scheme.utf8Start[i] { return nil }
            let start = scheme.utf8CodeUnitCount
            var end = start
            while end < b.count, b[end] != 0x2F, b[end] != 0x3F, b[end] != 0x23 { end += 1 }
            var fragment = end
            while fragment < b.count, b[fragment] != 0x23 { fragment += 1 }
            guard let origin = make(authority: UnsafeBufferPointer(rebasing: b[start..<end]), defaultPort: 80) else {
                return nil
            }
            let path = UnsafeBufferPointer(rebasing: b[end..<fragment])
            let target = path.first == 0x2F ? String(decoding: path, as: UTF8.self) : "/" + String(decoding: path, as: UTF8.self)
            return (origin, target)
        }
    }

    /// The origin of an authority (`host`, `host:port`, `[v6]:port`), `defaultPort` when it
    /// names none; nil for one with user information, an empty host, a bad port or a byte
    /// that cannot be in it.
    static func make(authority a: UnsafeBufferPointer<UInt8>, defaultPort: Int) -> HTTP1Origin? {
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
        var port = defaultPort
        if let portStart {
            let digits = a[portStart...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            port = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard (1...65535).contains(port) else { return nil }
        }
        return HTTP1Origin(
            host: String(decoding: UnsafeBufferPointer(rebasing: a[hostRange]), as: UTF8.self), port: port,
            authority: String(decoding: a, as: UTF8.self))
    }
}
