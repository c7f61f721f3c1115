/// A validated request line and header section.
public struct RequestHead: Sendable, Equatable {
    /// The method, upper case as sent (`GET`, `POST`, …).
    public var method: String
    /// The request target exactly as sent (origin-form, absolute-form, …).
    public var target: String
    /// HTTP major version.
    public var major: Int
    /// HTTP minor version.
    public var minor: Int
    /// The header fields in wire order.
    public var headers: HTTPHeaders
    /// How the body is delimited.
    public var framing: BodyFraming
    /// Whether the client waits for `100 Continue` before sending the body.
    public var expectsContinue: Bool
    /// Whether the connection may stay open after the response.
    public var keepAlive: Bool
    /// The client's `Upgrade` value (`websocket`, …) when this is an upgrade a proxy may pass
    /// on: `GET` over HTTP/1.1, no body, `Upgrade` present and `upgrade` among the
    /// `Connection` tokens (RFC 9110 §7.8). Nil for every other request, whose `Upgrade` is
    /// ignored.
    public var upgrade: String?

    /// Creates a head.
    public init(
        method: String, target: String, major: Int = 1, minor: Int = 1, headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none, expectsContinue: Bool = false, keepAlive: Bool = true, upgrade: String? = nil
    ) {
        self.upgrade = upgrade
        self.method = method
        self.target = target
        self.major = major
        self.minor = minor
        self.headers = headers
        self.framing = framing
        self.expectsContinue = expectsContinue
        self.keepAlive = keepAlive
    }

    /// The path part of the target (before `?`).
    public var path: Substring {
        if let q = target.firstIndex(of: "?") { return target[..<q] }
        return target[...]
    }

    /// Whether this is a HEAD request (its response carries no body).
    public var isHead: Bool { method == "HEAD" }
}
