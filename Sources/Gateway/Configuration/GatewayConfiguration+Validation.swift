import AuthCore
import Foundation

/// The checks of values the types cannot express; every error names the field at fault.
extension GatewayConfiguration {
    /// Checks values the types cannot.
    public func validate() throws(GatewayError) {
        try validateListeners()
        try validateStore()
        if adminTokenFile == nil && adminTokenDisabled != true {
            throw .required("adminTokenFile", "is required (or set adminTokenDisabled: true explicitly)")
        }
        if routes.isEmpty { throw .required("routes", "must name at least one route") }
        if let lead = refreshLead {
            if refreshSkewSeconds != nil {
                throw GatewayError(.conflict, field: "refreshLead", "refreshLead and refreshSkewSeconds: set only one")
            }
            if let problem = lead.problem { throw .invalid("refreshLead", problem) }
        }
        if let n = refreshSkewSeconds, !(0...86_400).contains(n) {
            throw .invalid("refreshSkewSeconds", "must be 0…86400")
        }
        if let n = maxReplays, !(0...10).contains(n) { throw .invalid("maxReplays", "must be 0…10") }
        if let n = accessLog?.sample, !(0...100).contains(n) {
            throw .invalid("accessLog.sample", "must be 0…100 (the percentage of requests logged)")
        }
        for (field, value, range) in [
            ("loops", loops, 1...256), ("refreshJitterSeconds", refreshJitterSeconds, 0...3_600),
            ("refreshLoopLimit", refreshLoopLimit, 1...1_000_000), ("replayLimitBytes", replayLimitBytes, 0...(64 << 20)),
            ("connectTimeoutSeconds", connectTimeoutSeconds, 1...300),
            ("upstreamTimeoutSeconds", upstreamTimeoutSeconds, 1...86_400),
            ("upgradeIdleTimeoutSeconds", upgradeIdleTimeoutSeconds, 1...86_400),
            ("maxConnections", maxConnections, 1...1_000_000),
            ("maxBufferedRequestBytes", maxBufferedRequestBytes, (1 << 20)...(16 << 30)),
        ] {
            if let value, !range.contains(value) {
                throw .invalid(field, "must be \(range.lowerBound)…\(range.upperBound)")
            }
        }
        if let budget = maxBufferedRequestBytes, (replayLimitBytes ?? 1 << 20) > budget {
            throw .conflict("replayLimitBytes", "must not exceed maxBufferedRequestBytes (\(budget))")
        }
        if adminTokenDisabled == true {
            if admin.unix != nil, !admin.isOwnerOnlySocket {
                throw .at(
                    "adminTokenDisabled", .conflict,
                    "true with admin.unix needs admin.mode 0600 (owner only): "
                        + "anyone the mode admits would call the admin API without a token")
            }
            if admin.unix == nil && !Self.isLoopback(host: admin.host ?? "") {
                throw .at(
                    "adminTokenDisabled", .conflict,
                    "true is allowed only with admin.host on loopback (127.0.0.1, ::1, localhost)")
            }
        }
        if let n = tokenEndpointTimeoutSeconds, !(1...300).contains(n) {
            throw .invalid("tokenEndpointTimeoutSeconds", "must be 1…300")
        }
        for (i, address) in (trustForwardedFrom ?? []).enumerated() where !Self.isIPAddress(address) {
            throw .invalid("trustForwardedFrom[\(i)]", "must be an IPv4 or IPv6 address")
        }
        let insecure = allowInsecureHTTP == true
        var names: Set<String> = [Self.defaultSession]
        for (i, session) in (sessions ?? []).enumerated() {
            guard Self.isValidSessionName(session.name), session.name != Self.defaultSession else {
                throw .invalid(
                    "sessions[\(i)].name", "must be 1–63 lower-case letters, digits, - or _, and not \(Self.defaultSession)")
            }
            guard names.insert(session.name).inserted else {
                throw .conflict("sessions[\(i)].name", "\(session.name) is used twice")
            }
            try Self.validate(session.authorization, at: "sessions[\(i)].authorization", insecure: insecure)
            try Self.validate(session.userInfo, at: "sessions[\(i)].userInfo", insecure: insecure)
        }
        var prefixes: Set<String> = []
        for (i, r) in routes.enumerated() {
            if let name = r.session, !names.contains(name) {
                throw .invalid("routes[\(i)].session", "names no session: \(name)")
            }
            guard r.prefix.hasPrefix("/"), r.prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x3F && $0 != 0x23 }) else {
                throw .invalid("routes[\(i)].prefix", "must start with / and be a path without spaces, ? or #")
            }
            guard prefixes.insert(r.prefix).inserted else {
                throw .conflict("routes[\(i)].prefix", "is the same as an earlier route's, which would always win")
            }
            guard ProxyRoute.parseUpstream(r.upstream) != nil, Self.isEndpointURL(r.upstream) else {
                throw .invalid(
                    "routes[\(i)].upstream",
                    "must be an http or https URL with a host and a port 1…65535, without query or credentials")
            }
            if r.requiresAuthentication ?? true {
                try Self.requireTLS(r.upstream, at: "routes[\(i)].upstream", insecure: insecure)
            } else if r.maxInFlight != nil || (r.queueTimeoutSeconds != nil && r.adaptiveLimit != true) {
                throw .conflict(
                    "routes[\(i)].maxInFlight", "and queueTimeoutSeconds apply only to routes that require authentication")
            }
            if let n = r.maxInFlight, !(1...100_000).contains(n) {
                throw .invalid("routes[\(i)].maxInFlight", "must be 1…100000")
            }
            if let n = r.queueTimeoutSeconds, !(1...3_600).contains(n) {
                throw .invalid("routes[\(i)].queueTimeoutSeconds", "must be 1…3600")
            }
            if let callers = r.callers { _ = try callers.rule(at: "routes[\(i)].callers") }
            try Self.validateCertificatePair(
                certificate: r.clientCertificateFile, key: r.clientCertificateKeyFile, at: "routes[\(i)]")
            if r.clientCertificateFile != nil && !r.upstream.lowercased().hasPrefix("https://") {
                throw .conflict("routes[\(i)].clientCertificateFile", "needs an https upstream: only TLS shows a certificate")
            }
        }
        try Self.validate(authorization, at: "authorization", insecure: insecure)
        try Self.validate(userInfo, at: "userInfo", insecure: insecure)
        if let path = proxyLivenessPath, !path.hasPrefix("/") || path.contains(where: { $0 == " " || $0 == "?" || $0 == "#" }) {
            throw .invalid("proxyLivenessPath", "must start with / and be a path without spaces, ? or #")
        }
    }

    /// Whether `text` is an `http` or `https` URL with a host, visible ASCII only, no user
    /// name or password (they would end up in logs) and no fragment.
    static func isEndpointURL(_ text: String) -> Bool {
        guard isHTTPURL(text), text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), let c = URLComponents(string: text),
            let host = c.host, !host.isEmpty, c.user == nil, c.password == nil, c.fragment == nil
        else { return false }
        return true
    }

    /// Each listener is TCP or a Unix socket, well formed; no two share a port or a path (`SO_REUSEPORT` would let two of them share a port, and split its
    /// connections between them).
    func validateListeners() throws(GatewayError) {
        for (field, listener) in listeners {
            if let error = listener.error(at: field) { throw error }
        }
        var seen: [String: String] = [:]
        for (field, listener) in listeners {
            let key: String
            if let path = listener.unix {
                key = "unix:" + path
            } else if let port = listener.port, port != 0 {
                key = "port:\(port)"
            } else {
                continue
            }
            if let other = seen[key] {
                let name = listener.unix != nil ? "unix" : "port"
                throw .conflict("\(field).\(name)", "is also \(other).\(name)")
            }
            seen[key] = field
        }
    }

    /// Whether `name` can name a session: 1–63 of `a-z`, `0-9`, `-`, `_`, starting with a
    /// letter or digit (it appears in metrics labels and admin URLs).
    public static func isValidSessionName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...63).contains(bytes.count) else { return false }
        func ok(_ b: UInt8) -> Bool { (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x2D || b == 0x5F }
        return bytes.allSatisfy(ok) && bytes[0] != 0x2D && bytes[0] != 0x5F
    }

    static func isHTTPURL(_ text: String) -> Bool {
        text.hasPrefix("http://") || text.hasPrefix("https://")
    }

    /// Whether `text` is a literal IPv4 or IPv6 address.
    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// Whether `host` is a loopback address or name.
    static func isLoopback(host: String) -> Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "[::1]" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Refuses an `http://` URL to a host other than loopback, unless `insecure`.
    static func requireTLS(_ url: String, at field: String, insecure: Bool) throws(GatewayError) {
        guard !insecure, url.lowercased().hasPrefix("http://"), let host = URLComponents(string: url)?.host,
            !isLoopback(host: host)
        else { return }
        throw .invalid(field, "must be https unless its host is loopback (or set allowInsecureHTTP: true)")
    }

    static func validate(_ a: Authorization, at field: String, insecure: Bool = false) throws(GatewayError) {
        try validateClientAuthentication(a, at: field)
        try validateLoginGrants(a, at: field)
        if let issuer = a.issuer, !OIDCDiscovery.isValidIssuer(issuer) {
            throw .invalid("\(field).issuer", "must be an http or https URL without query or fragment")
        }
        if a.tokenEndpoint == nil && a.issuer == nil {
            throw .required("\(field).tokenEndpoint", "is required (or set \(field).issuer to discover it)")
        }
        let urls = [
            ("issuer", a.issuer), ("tokenEndpoint", a.tokenEndpoint), ("revocationEndpoint", a.revocationEndpoint),
            ("deviceAuthorizationEndpoint", a.deviceAuthorizationEndpoint),
            ("mapping.refreshURL", a.mapping?.refreshURL),
        ]
        for (name, url) in urls {
            guard let url else { continue }
            if name != "issuer" && !isEndpointURL(url) {
                throw .invalid(
                    "\(field).\(name)", "must be an http or https URL with a host, without spaces, credentials or fragment")
            }
            try requireTLS(url, at: "\(field).\(name)", insecure: insecure)
            if a.clientCertificateFile != nil && name != "issuer" && !url.lowercased().hasPrefix("https://") {
                throw .conflict(
                    "\(field).\(name)", "must be https with \(field).clientCertificateFile: only TLS shows a certificate")
            }
        }
        if let m = a.mapping {
            try validate(m, at: "\(field).mapping")
            if m.refreshSendsExpiredAccessToken, a.clientID != nil, (a.clientAuthentication ?? "basic") == "basic" {
                throw .conflict(
                    "\(field).mapping.refreshSendsExpiredAccessToken",
                    "needs \(field).clientAuthentication post or none (basic would need the same Authorization header)")
            }
        }
    }

    /// Checks a token endpoint mapping's names and statuses.
    static func validate(_ m: TokenEndpointMapping, at field: String) throws(GatewayError) {
        if let header = m.accessTokenHeader, !TokenSyntax.isTokenType(header) {
            throw .invalid("\(field).accessTokenHeader", "must be a header name (an RFC 9110 token)")
        }
        if let bad = m.terminalStatuses.first(where: { !(400...599).contains($0) }) {
            throw .at("\(field).terminalStatuses", .invalidValue, "\(bad) is not a 4xx or 5xx status")
        }
        let standard = [
            "grant_type", "username", "password", "scope", "code", "redirect_uri", "code_verifier", "refresh_token", "client_id",
            "client_secret",
        ]
        for name in m.requestFieldNames.keys.sorted() where !standard.contains(name) {
            throw GatewayError(
                .unknownField, field: "\(field).requestFieldNames.\(name)",
                "\(field).requestFieldNames.\(name) renames no request field; the fields are \(standard.joined(separator: ", "))")
        }
    }

    static func validate(_ u: UserInfoProbe.Configuration?, at field: String, insecure: Bool = false) throws(GatewayError) {
        guard let u else { return }
        if !isEndpointURL(u.url) {
            throw .invalid("\(field).url", "must be an http or https URL with a host, without spaces, credentials or fragment")
        }
        try requireTLS(u.url, at: "\(field).url", insecure: insecure)
        if let r = u.maxRetrySeconds, r > 3600 { throw .invalid("\(field).maxRetrySeconds", "must be 1…3600") }
        if let bad = u.needsSignUpStatuses?.first(where: { !(400...499).contains($0) }) {
            throw .at("\(field).needsSignUpStatuses", .invalidValue, "\(bad) is not a 4xx status")
        }
        if let r = u.maxRetrySeconds, r < 1 { throw .invalid("\(field).maxRetrySeconds", "must be at least 1") }
    }
}
