public import HTTPWire

/// Settings of an ``HTTPServer``.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen: a TCP address and port, or a Unix domain socket.
    public var address: ListenAddress
    /// Size limits of requests.
    public var limits: HTTPLimits
    /// Time allowed for a request head, from its first byte (or from the connection's start).
    public var headTimeout: Duration
    /// Time a request body may go without a byte.
    public var bodyIdleTimeout: Duration
    /// Time an idle keep-alive connection stays open.
    public var keepAliveTimeout: Duration
    /// Connections served at once across all loops; past it new ones get 503 and are closed.
    public var maxConnections: Int
    /// The listen backlog.
    public var backlog: Int32
    /// Bytes queued for a client before a streaming writer is made to wait.
    public var writeHighWater: Int
    /// Bytes of a streamed request body buffered before reading from the client pauses.
    public var bodyHighWater: Int
    /// The bound on buffered request bodies shared with other servers of the process (nil:
    /// only the per-request limit applies). Past it a request gets 503 and is closed.
    public var bufferBudget: BufferBudget?
    /// How long responses in flight may take to finish once a graceful shutdown stops
    /// accepting (``HTTPServer/run()``); past it their connections are closed.
    public var shutdownGrace: Duration

    /// Creates a configuration for a TCP listener on `host`:`port`, every other setting at
    /// its documented default (set them as properties).
    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.init(address: .tcp(host: host, port: port))
    }

    /// Creates a configuration listening at `address`; the defaults are the documented ones.
    public init(
        address: ListenAddress,
        limits: HTTPLimits = HTTPLimits(),
        headTimeout: Duration = .seconds(10),
        bodyIdleTimeout: Duration = .seconds(30),
        keepAliveTimeout: Duration = .seconds(60),
        maxConnections: Int = 10_000,
        backlog: Int32 = 1024,
        writeHighWater: Int = 256 * 1024,
        bodyHighWater: Int = 256 * 1024,
        bufferBudget: BufferBudget? = nil,
        shutdownGrace: Duration = .seconds(10)
    ) {
        self.shutdownGrace = shutdownGrace
        self.bufferBudget = bufferBudget
        self.address = address
        self.limits = limits
        self.headTimeout = headTimeout
        self.bodyIdleTimeout = bodyIdleTimeout
        self.keepAliveTimeout = keepAliveTimeout
        self.maxConnections = maxConnections
        self.backlog = backlog
        self.writeHighWater = writeHighWater
        self.bodyHighWater = bodyHighWater
    }
}

extension HTTPServerConfiguration {
    /// The TCP host, or "" for a Unix socket. Setting it makes the address TCP.
    public var host: String {
        get {
            if case .tcp(let host, _) = address { return host }
            return ""
        }
        set { address = .tcp(host: newValue, port: port) }
    }

    /// The TCP port (0 picks a free one, see ``HTTPServer/port``), or 0 for a Unix socket.
    /// Setting it makes the address TCP.
    public var port: Int {
        get {
            if case .tcp(_, let port) = address { return port }
            return 0
        }
        set { address = .tcp(host: host.isEmpty ? "127.0.0.1" : host, port: newValue) }
    }
}

extension Duration {
    /// Whole milliseconds, at least 1.
    var milliseconds: UInt64 {
        let (s, atto) = components
        return max(1, UInt64(max(0, s)) * 1000 + UInt64(max(0, atto)) / 1_000_000_000_000_000)
    }
}
