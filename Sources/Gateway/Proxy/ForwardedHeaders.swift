public import HTTPWire

/// Header rewriting for a proxy hop (RFC 9110 §7.6).
public enum ForwardedHeaders {
    /// Hop-by-hop fields, never forwarded in either direction.
    public static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authorization",
    ]

    /// `hopByHop`, looked up without allocating.
    private static let hopByHopSet = HeaderNameSet(hopByHop)

    /// `headers` without the fields in `removed` (hop-by-hop ones among them) and those
    /// named in `Connection`.
    /// With `extraFields`, room is made for that many more (the copy a shared list needs
    /// anyway is made once, with it); without, a list nobody else holds is edited in place.
    static func strip(_ headers: consuming HTTPHeaders, removing removed: HeaderNameSet, extraFields: Int = 0) -> HTTPHeaders {
        let named = connectionNamed(headers, besides: removed)
        func dropped(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
            if removed.contains(name) { return true }
            return named.contains { token in token.withUnsafeBufferPointer { HTTPHeaders.equalsIgnoringCase(name, $0) } }
        }
        guard extraFields == 0 else {
            // A new list (a spare of this thread's when there is one) with the kept lines
            // copied in runs: one pass, where a copy then a removal would be two.
            var out = HTTPHeaders.pooled(fields: headers.count + extraFields, bytes: headers.byteCount + 40 * extraFields)
            out.add(contentsOf: headers) { !dropped($0) }
            return out
        }
        var out = consume headers
        out.removeAll(where: dropped)
        return out
    }

    /// The fields `Connection` names as hop-by-hop that `removed` does not already hold.
    /// Most messages name nothing in `Connection` but `keep-alive` or `close`.
    private static func connectionNamed(_ headers: borrowing HTTPHeaders, besides removed: HeaderNameSet) -> [[UInt8]] {
        var named: [[UInt8]] = []
        // No `contains("connection")` first: the lookup below ends at once, reading no
        // entry, when no field has a name as long as `Connection`, and finds the field
        // itself otherwise.
        FramingRules.forEachConnectionToken(headers) { token in
            if !removed.contains(token) { named.append(Array(token)) }
        }
        return named
    }

    /// The header fields sent upstream for a client request.
    ///
    /// - Removes hop-by-hop fields, `Content-Length` and `Expect` (the upstream client
    ///   frames the body itself), and `Host`, replaced by the upstream's authority.
    /// - Sets `X-Forwarded-For` to the client address — appended to the client's own
    ///   `X-Forwarded-For` only when the client is a proxy in `trustedProxies` (otherwise any
    ///   client could claim any origin) — sets `X-Forwarded-Proto` and `X-Forwarded-Host`,
    ///   and appends this hop to `Via`.
    public static func upstreamRequest(
        _ headers: HTTPHeaders, clientAddress: String, upstreamAuthority: String, removeAuthorization: Bool,
        trustedProxies: Set<String> = []
    ) -> HTTPHeaders {
        upstreamRequest(
            headers, clientAddress: clientAddress, hostField: hostField(upstreamAuthority),
            removeAuthorization: removeAuthorization, trustedProxies: trustedProxies)
    }

    /// `Host: authority`, made and checked once per route, when its upstream is set
    /// (``ProxyRoute/upstream``).
    public static func hostField(_ authority: String) -> HTTPHeaders { HTTPHeaders([("Host", authority)]) }

    /// ``upstreamRequest(_:clientAddress:upstreamAuthority:removeAuthorization:trustedProxies:)``
    /// with the upstream's `Host` field made beforehand (``hostField(_:)``).
    public static func upstreamRequest(
        _ headers: HTTPHeaders, clientAddress: String, hostField: HTTPHeaders, removeAuthorization: Bool,
        trustedProxies: Set<String> = []
    ) -> HTTPHeaders {
        // Room for Host, X-Forwarded-For, -Proto, -Host and Via.
        var out = strip(
            headers, removing: removeAuthorization ? requestRemovalsWithAuthorization : requestRemovals, extraFields: 5)
        out.add(contentsOf: hostField)
        appendForwardedFor(&out, clientAddress: clientAddress, headers, trustedProxies: trustedProxies)
        out.add(contentsOf: forwardedProto)
        var hostCopied = false
        headers.forEach(named: "host") { host in
            if hostCopied { return }
            hostCopied = true
            out.add(name: "X-Forwarded-Host", value: host)
        }
        appendVia(&out, prior: priorHops(headers))
        return out
    }

    private static let requestRemovals = hopByHopSet.adding([
        "content-length", "expect", "host", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-for", "via",
    ])
    private static let requestRemovalsWithAuthorization = requestRemovals.adding(["authorization"])
    private static let responseRemovals = hopByHopSet.adding(["via"])

    /// The header fields sent to the client for an upstream response.
    /// Owned: a list only the caller holds is edited in place.
    public static func clientResponse(_ headers: consuming HTTPHeaders) -> HTTPHeaders {
        let prior = priorHops(headers)
        var out = strip(headers, removing: responseRemovals)
        appendVia(&out, prior: prior)
        return out
    }

    /// The `Via` values of `headers`, unless `Connection` names `Via` as hop-by-hop.
    private static func priorHops(_ headers: HTTPHeaders) -> [String] {
        let prior = headers[all: "via"]
        if prior.isEmpty || !headers.contains("connection") { return prior }
        return FramingRules.connectionTokenList(headers).contains("via") ? [] : prior
    }

    /// Adds one `Via` holding the earlier hops (already removed from `headers`) and this one.
    private static func appendVia(_ headers: inout HTTPHeaders, prior: [String]) {
        if prior.isEmpty {
            headers.add(contentsOf: thisHop)
        } else {
            headers.add(name: "Via", value: (prior + ["1.1 authgate"]).joined(separator: ", "))
        }
    }

    /// The fields every hop adds, made (and checked) once.
    private static let thisHop = HTTPHeaders([("Via", "1.1 authgate")])
    private static let forwardedProto = HTTPHeaders([("X-Forwarded-Proto", "http")])

    /// The IP part of `ip:port` or `[ip]:port`.
    static func clientIP(_ address: String) -> String {
        var address = address
        return address.withUTF8 { String(decoding: ipBytes($0), as: UTF8.self) }
    }

    /// The bytes of the IP part of `ip:port` or `[ip]:port` (bytes, not Characters: an
    /// address is ASCII).
    private static func ipBytes(_ u: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        if u.first == UInt8(ascii: "["), let end = u.firstIndex(of: UInt8(ascii: "]")) {
            return UnsafeBufferPointer(rebasing: u[1..<end])
        }
        if let colon = u.lastIndex(of: UInt8(ascii: ":")) { return UnsafeBufferPointer(rebasing: u[..<colon]) }
        return u
    }

    /// Adds `X-Forwarded-For`: the client's IP, after the client's own values when the client
    /// is a trusted proxy. The IP goes in as bytes: no string is made unless proxies are trusted.
    private static func appendForwardedFor(
        _ out: inout HTTPHeaders, clientAddress: String, _ headers: HTTPHeaders, trustedProxies: Set<String>
    ) {
        var address = clientAddress
        address.withUTF8 { u in
            let ip = ipBytes(u)
            if !trustedProxies.isEmpty {
                let text = String(decoding: ip, as: UTF8.self)
                let prior = trustedProxies.contains(text) ? headers[all: "x-forwarded-for"] : []
                if !prior.isEmpty {
                    out.add(name: "X-Forwarded-For", value: (prior + [text]).joined(separator: ", "))
                    return
                }
            }
            out.add(name: "X-Forwarded-For", value: ip)
        }
    }
}
