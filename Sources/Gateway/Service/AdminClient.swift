public import HTTPWire
import Runtime

/// Calls a running gateway's admin API: the one client every `authgate` client command
/// (`status`, `login`, `logout`, `reload`, `events`) shares. Every call (``send(_:_:json:)``,
/// ``follow(path:lastEventID:message:notice:)``) of every client in the process runs on one
/// event loop, started at the first call and kept until the process ends: a device login
/// follows the session's events while it polls, on that one thread.
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
        let client = try await Self.client(UpstreamClientConfiguration(unixSocketPath: endpoint.unixSocketPath))
        defer { Self.retire(client) }
        let response = try await client.send(request)
        return Response(status: response.status, headers: response.headers, body: response.body)
    }
}

extension AdminClient {
    /// The loop every call runs on: started at the first call, kept for the process (a
    /// client command makes a few calls and exits).
    private static let loop: Result<EventLoop, RuntimeError> = {
        do throws(RuntimeError) {
            let loop = try EventLoop(name: "authgate-cli")
            loop.start()
            return .success(loop)
        } catch {
            return .failure(error)
        }
    }()

    /// A client for one call on the shared loop; throws when the loop could not start.
    static func client(_ configuration: UpstreamClientConfiguration) async throws(RuntimeError) -> UpstreamClient {
        await UpstreamClient.make(on: try loop.get(), configuration: configuration)
    }

    /// Closes `client`'s connections once nothing is under way on it.
    static func retire(_ client: UpstreamClient) {
        guard case .success(let loop) = loop else { return }
        loop.execute { client.retire() }
    }
}
