import Runtime

/// Where the `authgate` client commands reach the admin API: a base URL
/// (`http://127.0.0.1:8081`) or a Unix domain socket (`unix:/run/authgate/admin.sock`).
///
/// ```swift
/// let endpoint = try AdminEndpoint(parsing: "unix:/run/authgate/admin.sock")
/// endpoint.url("/auth/session")      // "http://localhost/auth/session", sent over the socket
/// endpoint.unixSocketPath            // "/run/authgate/admin.sock"
/// ```
public struct AdminEndpoint: Sendable, Equatable {
    /// The base URL, without a trailing slash (`http://localhost` for a socket: the host only
    /// fills the `Host` header, the admin API does not read it).
    public let baseURL: String
    /// The socket every request connects to instead of the URL's host, if any.
    public let unixSocketPath: String?

    /// Reads `http://HOST:PORT`, `https://…` or `unix:/ABSOLUTE/PATH`.
    public init(parsing text: String) throws(GatewayError) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            guard path.hasPrefix("/"), !path.hasSuffix("/") else {
                throw GatewayError(
                    .invalidValue, field: "--admin",
                    "--admin unix: needs an absolute socket path, such as unix:/run/authgate/admin.sock")
            }
            guard path.utf8.count <= ListenAddress.maxUnixPathBytes else {
                throw .at("--admin", .invalidValue, "a socket path has at most \(ListenAddress.maxUnixPathBytes) bytes")
            }
            baseURL = "http://localhost"
            unixSocketPath = path
            return
        }
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), !text.contains("?"), !text.contains("#") else {
            throw .invalid(
                "--admin", "must be an http:// URL (http://127.0.0.1:8081) or a Unix socket (unix:/run/authgate/admin.sock)")
        }
        var base = Substring(text)
        while base.hasSuffix("/") { base = base.dropLast() }
        baseURL = String(base)
        unixSocketPath = nil
    }

    /// The URL of `path` (which starts with `/`).
    public func url(_ path: String) -> String { baseURL + path }

    /// The curl options and URL that reach `path`, for a command line shown to people.
    public func curlArguments(_ path: String) -> String {
        guard let unixSocketPath else { return url(path) }
        return "--unix-socket \(unixSocketPath) \(url(path))"
    }
}
