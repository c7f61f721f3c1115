public import HTTPWire

/// Header rewriting for a proxy hop (RFC 9110 §7.6).
public enum ForwardedHeaders {
    /// Hop-by-hop fields, never forwarded in either direction.
    public static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authorization",
    ]

    /// `headers` without hop-by-hop fields, the fields named in `Connection`, and `extra`.
    public static func strip(_ headers: HTTPHeaders, alsoRemoving extra: Set<String> = []) -> HTTPHeaders {
        let named = FramingRules.connectionTokens(headers)
        return HTTPHeaders(
            headers.fields.filter { field in
                let n = field.name.asciiLowercased
                return !hopByHop.contains(n) && !named.contains(n) && !extra.contains(n)
            })
    }

    /// The header fields sent upstream for a client request.
    ///
    /// - Removes hop-by-hop fields, `Content-Length` and `Expect` (the upstream client
    ///   frames the body itself), and `Host`, replaced by the upstream's authority.
    /// - Appends the client address to `X-Forwarded-For`, sets `X-Forwarded-Proto` and
    ///   `X-Forwarded-Host`, and appends this hop to `Via`.
    public static func upstreamRequest(
        _ headers: HTTPHeaders, clientAddress: String, upstreamAuthority: String, removeAuthorization: Bool
    ) -> HTTPHeaders {
        var extra: Set<String> = ["content-length", "expect", "host", "x-forwarded-proto", "x-forwarded-host"]
        if removeAuthorization { extra.insert("authorization") }
        var out = strip(headers, alsoRemoving: extra)
        out.add(name: "Host", value: upstreamAuthority)
        let ip = clientIP(clientAddress)
        let prior = headers[all: "x-forwarded-for"]
        out.remove(name: "X-Forwarded-For")
        out.add(name: "X-Forwarded-For", value: (prior + [ip]).joined(separator: ", "))
        out.add(name: "X-Forwarded-Proto", value: "http")
        if let host = headers[first: "host"] { out.add(name: "X-Forwarded-Host", value: host) }
        appendVia(&out)
        return out
    }

    /// The header fields sent to the client for an upstream response.
    public static func clientResponse(_ headers: HTTPHeaders) -> HTTPHeaders {
        var out = strip(headers)
        appendVia(&out)
        return out
    }

    private static func appendVia(_ headers: inout HTTPHeaders) {
        let prior = headers[all: "via"]
        headers.remove(name: "Via")
        headers.add(name: "Via", value: (prior + ["1.1 authgate"]).joined(separator: ", "))
    }

    /// The IP part of `ip:port` or `[ip]:port`.
    static func clientIP(_ address: String) -> String {
        if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<end])
        }
        if let colon = address.lastIndex(of: ":") { return String(address[..<colon]) }
        return address
    }
}
