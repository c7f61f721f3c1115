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

    /// Creates a head.
    public init(
        method: String, target: String, major: Int = 1, minor: Int = 1, headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none, expectsContinue: Bool = false, keepAlive: Bool = true
    ) {
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
