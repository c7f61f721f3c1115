import Foundation

/// The admin API's endpoints behind the admin token, and the decision, made on the request
/// head and the body's size alone, of whether a request may reach one: the path exists
/// (404), the method is one it offers (405), the query holds only the parameters it takes,
/// each once and well-formed (400), and a body comes only where one is taken (400).
///
/// `/metrics` takes no parameter and no body but refuses neither, as scrapers are configured
/// by others and nothing there can address the wrong session.
struct AdminRoute: Sendable, Equatable {
    enum Endpoint: Sendable, Equatable {
        case login, logout, session, sessions, refresh, guest, events, metrics, reload
    }

    let endpoint: Endpoint
    /// The methods it offers, as the `Allow` header lists them.
    let methods: [String]
    /// The query parameters it takes.
    let parameters: [String]
    /// Whether it takes a request body.
    let takesBody: Bool
    /// Whether a query parameter it does not take, or a body, is refused.
    let strict: Bool

    init(_ endpoint: Endpoint, _ methods: [String], _ parameters: [String], takesBody: Bool = false, strict: Bool = true) {
        self.endpoint = endpoint
        self.methods = methods
        self.parameters = parameters
        self.takesBody = takesBody
        self.strict = strict
    }

    static let routes: [String: AdminRoute] = [
        "/auth/login": AdminRoute(.login, ["POST"], ["session"], takesBody: true),
        "/auth/logout": AdminRoute(.logout, ["POST"], ["session"]),
        "/auth/session": AdminRoute(.session, ["GET", "HEAD"], ["session"]),
        "/auth/sessions": AdminRoute(.sessions, ["GET", "HEAD"], []),
        "/auth/refresh": AdminRoute(.refresh, ["POST"], ["session"]),
        "/auth/guest": AdminRoute(.guest, ["POST", "DELETE"], ["session"]),
        "/auth/events": AdminRoute(.events, ["GET"], ["session", "last_event_id"]),
        "/metrics": AdminRoute(.metrics, ["GET"], [], strict: false),
        "/auth/reload": AdminRoute(.reload, ["POST"], []),
    ]

    /// What to do with a request.
    enum Decision: Sendable, Equatable {
        /// No endpoint at this path.
        case noRoute
        /// The path does not offer this method; `allow` lists the ones it does.
        case methodNotAllowed(allow: [String])
        case refused(AdminRequestError)
        /// Serve it; `query` holds the parameters given, decoded and checked.
        case serve(AdminRoute, query: [String: String])
    }

    /// The decision for `method` on `target` (path and query) with a body of `bodyBytes` bytes.
    static func decide(method: String, target: String, bodyBytes: Int) -> Decision {
        let path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        guard let route = routes[path] else { return .noRoute }
        guard route.methods.contains(method) else { return .methodNotAllowed(allow: route.methods) }
        let query: [String: String]
        do {
            query = try route.query(target)
        } catch {
            return .refused(error)
        }
        if bodyBytes > 0 && !route.takesBody && route.strict {
            return .refused(
                AdminRequestError(
                    .unexpectedBody,
                    "\(method) \(path) takes no request body"
                        + (route.parameters.contains("session") ? "; address a session with ?session=NAME" : "")))
        }
        return .serve(route, query: query)
    }

    /// The query parameters of `target` this route takes, percent-decoded and checked.
    func query(_ target: String) throws(AdminRequestError) -> [String: String] {
        guard let q = target.firstIndex(of: "?") else { return [:] }
        var values: [String: String] = [:]
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(kv[0]) else {
                throw AdminRequestError(.invalidQuery, "a query parameter name is not percent-encoded UTF-8")
            }
            guard parameters.contains(name) else {
                guard strict else { continue }
                let takes = parameters.isEmpty ? "takes none" : "takes \(LoginFieldSyntax.list(parameters, "and"))"
                throw AdminRequestError(
                    .invalidQuery, "unknown query parameter \(StrictJSON.shown(name)); this endpoint \(takes)",
                    parameter: name)
            }
            guard values[name] == nil else {
                throw AdminRequestError(.invalidQuery, "the query parameter \(name) is given more than once", parameter: name)
            }
            guard let value = Self.decode(kv.count == 2 ? kv[1] : "") else {
                throw AdminRequestError(
                    .invalidQuery, "the query parameter \(name) is not percent-encoded UTF-8", parameter: name)
            }
            if let requirement = Self.violation(name, value) {
                throw AdminRequestError(.invalidQuery, "the query parameter \(name) \(requirement)", parameter: name)
            }
            values[name] = value
        }
        return values
    }

    /// What `value` breaks as the value of parameter `name`, as the end of a sentence, or nil.
    static func violation(_ name: String, _ value: String) -> String? {
        switch name {
        case "session":
            return GatewayConfiguration.isValidSessionName(value)
                ? nil : "must be a session name: 1–63 lower-case letters, digits, - or _, starting with a letter or digit"
        case "last_event_id":
            return lastEventID(value) == nil ? "must be an event id: an integer from 0 to \(UInt64.max)" : nil
        default:
            return nil
        }
    }

    /// An event id: decimal digits only (no sign, no space), up to `UInt64.max`.
    static func lastEventID(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt64(text)
    }

    /// Percent-decoded, `+` as a space (form encoding); nil when not valid UTF-8.
    private static func decode(_ raw: Substring) -> String? {
        raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
