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
    static func strip(_ headers: HTTPHeaders, removing removed: HeaderNameSet) -> HTTPHeaders {
        // Most messages name nothing in `Connection` but `keep-alive` or `close`.
        var named: [[UInt8]] = []
        if headers.contains("connection") {
            FramingRules.forEachConnectionToken(headers) { token in
                if !removed.contains(token) { named.append(Array(token)) }
            }
        }
        var out = headers
        // One copy of the fields, with room for the ones a hop adds.
        out.reserveCapacity(headers.count + 5, bytes: headers.byteCount + 192)
        out.removeAll { name in
            if removed.contains(name) { return true }
            return named.contains { token in token.withUnsafeBufferPointer { HTTPHeaders.equalsIgnoringCase(name, $0) } }
        }
        return out
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
        var out = strip(headers, removing: removeAuthorization ? requestRemovalsWithAuthorization : requestRemovals)
        out.add(name: "Host", value: upstreamAuthority)
        let ip = clientIP(clientAddress)
        let prior = trustedProxies.contains(ip) ? headers[all: "x-forwarded-for"] : []
        out.add(name: "X-Forwarded-For", value: prior.isEmpty ? ip : (prior + [ip]).joined(separator: ", "))
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
    public static func clientResponse(_ headers: HTTPHeaders) -> HTTPHeaders {
        var out = strip(headers, removing: responseRemovals)
        appendVia(&out, prior: priorHops(headers))
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
        // Bytes, not Characters: an address is ASCII.
        var address = address
        return address.withUTF8 { u in
            if u.first == UInt8(ascii: "["), let end = u.firstIndex(of: UInt8(ascii: "]")) {
                return String(decoding: UnsafeBufferPointer(rebasing: u[1..<end]), as: UTF8.self)
            }
            if let colon = u.lastIndex(of: UInt8(ascii: ":")) {
                return String(decoding: UnsafeBufferPointer(rebasing: u[..<colon]), as: UTF8.self)
            }
            return String(decoding: u, as: UTF8.self)
        }
    }
}
