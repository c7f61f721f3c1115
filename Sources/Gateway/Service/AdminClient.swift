public import HTTPWire
import Runtime

/// Calls a running gateway's admin API: the one client every `authgate` client command
/// (`status`, `login`, `logout`, `reload`, `events`) shares. Each call (``send(_:_:json:)``,
/// ``follow(path:lastEventID:message:notice:)``) runs on an event loop of its own that lives
/// as long as the call.
///
/// ```swift
/// let client = AdminClient(endpoint: try AdminEndpoint(parsing: "unix:/run/authgate/admin.sock"), token: token)
/// let answer = try await client.send("GET", "/auth/session")
/// print(answer.status, String(decoding: answer.body, as: UTF8.self))
/// ```
public struct AdminClient: Sendable {
    /// An answer of the admin API.
    public struct Response: Sendable {
        /// The HTTP status.
        public var status: Int
        /// The header fields.
        public var headers: HTTPHeaders
        /// The body (at most 1 MiB).
        public var body: [UInt8]
    }

    /// Where the admin API listens.
    public let endpoint: AdminEndpoint
    /// The admin token sent as `Authorization: Bearer`, if any.
    public let token: String?
    /// An event stream that moves no byte for this long is given up and made again (the
    /// admin API sends a heartbeat every 15 s).
    public var eventsIdleTimeout: Duration = .seconds(45)

    /// Creates a client; `token` is never shown in an error.
    public init(endpoint: AdminEndpoint, token: String?) {
        self.endpoint = endpoint
        self.token = token
    }

    /// Sends `method path` (the path with its query), with a JSON `body` when given.
    /// Throws when the admin API cannot be reached or does not answer.
    public func send(_ method: String, _ path: String, json body: [UInt8]? = nil) async throws -> Response {
        var headers = HTTPHeaders()
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        let request = UpstreamRequest(
            method: method, url: endpoint.url(path), headers: headers, body: body.map { .bytes($0) } ?? .none)
        let loop = try EventLoop(name: "authgate-cli")
        loop.start()
        let client = await UpstreamClient.make(
            on: loop, configuration: UpstreamClientConfiguration(unixSocketPath: endpoint.unixSocketPath))
        let response: UpstreamResponse
        do {
            response = try await client.send(request)
        } catch {
            await loop.close()
            throw error
        }
        await loop.close()
        return Response(status: response.status, headers: response.headers, body: response.body)
    }
}
