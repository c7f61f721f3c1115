public import HTTPWire

/// Settings of an ``UpstreamClient``.
public struct UpstreamClientConfiguration: Sendable {
    /// Time allowed to connect (TCP and TLS).
    public var connectTimeout: Duration
    /// Time allowed for a whole exchange; nil for none.
    public var totalTimeout: Duration?
    /// Time a transfer may go without moving a byte.
    public var idleTimeout: Duration
    /// Connections per upstream host, pooled and reused (`CURLMOPT_MAX_HOST_CONNECTIONS`).
    public var maxConnectionsPerHost: Int
    /// The most new connections to one origin not yet answered at once, per event loop, on
    /// the loop's own HTTP/1.1 client: a burst opens this many and reuses or opens more as
    /// their first answers arrive, so an API with a short listen backlog drops no connection
    /// attempt.
    public var maxConnectingPerHost: Int = 4
    /// How long a new connection still counts against ``maxConnectingPerHost`` after its
    /// connect completed when no answer has arrived (default 250 ms: longer than TCP's
    /// 200 ms minimum retransmission timeout, a quarter of the first SYN retransmit), so
    /// that slow first answers do not stall the origin's other exchanges; zero counts a
    /// connection only while it connects.
    public var firstAnswerWindow: Duration = .milliseconds(250)
    /// A PEM bundle of trusted CAs; nil uses the system's.
    public var caFile: String?
    /// A directory of trusted CAs.
    public var caPath: String?
    /// A PEM client certificate for mTLS.
    public var clientCertificate: String?
    /// The PEM key of ``clientCertificate``.
    public var clientKey: String?
    /// Offer HTTP/2 over TLS (ALPN); plain-text upstreams use HTTP/1.1.
    public var http2: Bool
    /// Connect every request to this Unix domain socket instead of the URL's host and port
    /// (`CURLOPT_UNIX_SOCKET_PATH`); the URL still gives the path and the `Host` header.
    public var unixSocketPath: String?
    /// Serve `http://` upstreams on the loop's own HTTP/1.1 connections (``HTTP1Pool``)
    /// rather than through libcurl, which keeps TLS, HTTP/2 and Unix sockets (default on).
    public var loopHTTP1: Bool
    /// How long a connection spliced after `101 Switching Protocols` (WebSocket) may go with
    /// no byte moving either way before both sides are closed (default 5 minutes).
    public var tunnelIdleTimeout: Duration
    /// Where the loop's own HTTP/1.1 connections are counted per origin (busy and idle), when
    /// anyone reads the counts: the same object for every loop's client.
    public var connectionGauges: UpstreamConnectionGauges?

    /// Creates a configuration; the defaults suit a sidecar on one host.
    public init(
        connectTimeout: Duration = .seconds(5), totalTimeout: Duration? = .seconds(60), idleTimeout: Duration = .seconds(30),
        maxConnectionsPerHost: Int = 64, caFile: String? = nil, caPath: String? = nil, clientCertificate: String? = nil,
        clientKey: String? = nil, http2: Bool = true, unixSocketPath: String? = nil, loopHTTP1: Bool = true,
        tunnelIdleTimeout: Duration = .seconds(300)
    ) {
        self.tunnelIdleTimeout = tunnelIdleTimeout
        self.loopHTTP1 = loopHTTP1
        self.unixSocketPath = unixSocketPath
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.idleTimeout = idleTimeout
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.caFile = caFile
        self.caPath = caPath
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
        self.http2 = http2
    }
}

/// A request to an upstream.
public struct UpstreamRequest: Sendable {
    /// Where a request goes: an absolute URL, or an origin parsed beforehand and a target.
    public enum Destination: Sendable {
        /// The absolute URL (`http://host:port/path?query`), parsed for each request.
        case url(String)
        /// An origin parsed once (``UpstreamOrigin``) and the request target: a path
        /// starting with `/`, with its query.
        case origin(UpstreamOrigin, target: String)
    }

    /// The method.
    public var method: String
    /// Where the request goes.
    public var destination: Destination
    /// The absolute URL; for a ``Destination/origin(_:target:)`` request it is put
    /// together on each read (only libcurl needs it).
    public var url: String {
        switch destination {
        case .url(let url): url
        case .origin(let origin, let target): origin.url(target)
        }
    }
    /// Header fields to send, already cleaned of hop-by-hop and framing fields.
    public var headers: HTTPHeaders
    /// The body.
    public var body: UpstreamRequestBody
    /// Whether the request asks to switch protocols (its `Upgrade` and `Connection: upgrade`
    /// are in ``headers``): a `101` answer hands the connection over
    /// (``UpstreamResponseHandler/upstreamSwitched(headers:tunnel:)``). Only the loop's
    /// HTTP/1.1 client serves it; an exchange libcurl would carry fails with
    /// `upstream-invalid-request`, nothing sent.
    public var upgrade: Bool
    /// The certificate shown to an `https` upstream in place of the client's
    /// (``UpstreamClientConfiguration/clientCertificate``); a plain-text request never
    /// shows one.
    public var clientIdentity: TLSClientIdentity?

    /// Creates a request to the absolute `url`.
    public init(
        method: String, url: String, headers: HTTPHeaders = HTTPHeaders(), body: UpstreamRequestBody = .none,
        upgrade: Bool = false, clientIdentity: TLSClientIdentity? = nil
    ) {
        self.init(
            method: method, destination: .url(url), headers: headers, body: body, upgrade: upgrade,
            clientIdentity: clientIdentity)
    }

    /// Creates a request to `destination`.
    public init(
        method: String, destination: Destination, headers: HTTPHeaders = HTTPHeaders(), body: UpstreamRequestBody = .none,
        upgrade: Bool = false, clientIdentity: TLSClientIdentity? = nil
    ) {
        self.clientIdentity = clientIdentity
        self.upgrade = upgrade
        self.method = method
        self.destination = destination
        self.headers = headers
        self.body = body
    }

    /// The origin and target the loop's HTTP/1.1 client would use: an `http` origin as it
    /// is, or a URL parsed (``UpstreamOrigin/parse(_:)``); nil for `https` and anything else.
    var http1Destination: (origin: UpstreamOrigin, target: String)? {
        switch destination {
        case .origin(let origin, let target): origin.isHTTPS ? nil : (origin, target)
        case .url(let url): UpstreamOrigin.parse(url)
        }
    }
}

extension UpstreamRequest {
    /// Refuses a header field a peer could read as more than one: a name that is not a
    /// token, or a value with a control character (CR or LF would start a header, or a
    /// request, of its own). The last line against header injection, before any engine
    /// sends a byte.
    func checkHeaderFields() throws(RuntimeError) {
        // Each field was checked when it was added; this only reads what was found.
        guard let bad = headers.firstInvalidField else { return }
        if bad.nameIsInvalid {
            throw .upstream(.invalidRequest, "a request header name is not an HTTP token; nothing was sent")
        }
        throw .upstream(
            .invalidRequest, "the value of the request header \(bad.name) contains a control character; nothing was sent")
    }
}

/// The body of an upstream request.
public enum UpstreamRequestBody: Sendable {
    /// No body.
    case none
    /// A body in memory (replayable).
    case bytes([UInt8])
    /// A body streamed from the client as it arrives, of known length or chunked.
    case stream(BodyStream, length: UInt64?)
}

/// A buffered upstream response.
public struct UpstreamResponse: Sendable {
    /// The status.
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body.
    public var body: [UInt8]
}

/// Receives an upstream response as it arrives, on the loop thread.
public protocol UpstreamResponseHandler: AnyObject {
    /// The final (non-1xx) status and header fields, handed over: the parser keeps no copy,
    /// so a handler that edits them does so in place.
    func upstreamHead(status: Int, headers: consuming HTTPHeaders)
    /// Body bytes. Return false to refuse them for now: the transfer pauses and the same
    /// bytes come again after ``UpstreamTransfer/resume()``.
    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The exchange ended; nil means success, else an error with one of the `upstream-…`
    /// codes (``RuntimeError/Code/isUpstream``).
    func upstreamFinished(_ error: RuntimeError?)
    /// The upstream answered an upgrade request (``UpstreamRequest/upgrade``) with `101
    /// Switching Protocols`: `headers` are the 101's, and `tunnel` is the connection, which
    /// no longer speaks HTTP. The exchange is over (``upstreamFinished(_:)`` does not follow);
    /// the handler owns `tunnel` and must splice or close it. The default closes it and
    /// ends the exchange with `upstream-invalid-response`.
    func upstreamSwitched(headers: HTTPHeaders, tunnel: UpstreamTunnel)
}

extension UpstreamResponseHandler {
    /// Closes `tunnel` and ends the exchange with `upstream-invalid-response`.
    public func upstreamSwitched(headers: HTTPHeaders, tunnel: UpstreamTunnel) {
        tunnel.close()
        upstreamFinished(.upstream(.invalidResponse, "the upstream switched protocols, which this exchange cannot follow"))
    }
}

/// One exchange in flight with an upstream, as its starter sees it. Loop-confined.
///
/// Two engines implement it: ``HTTP1Exchange`` on the loop's own connections for
/// `http://` upstreams, and libcurl for the rest (TLS, HTTP/2, Unix sockets).
public protocol UpstreamTransfer: AnyObject {
    /// Whether the exchange has ended (its handler has heard `upstreamFinished`).
    var isFinished: Bool { get }
    /// Continues an exchange whose handler refused body bytes; they come again.
    func resume()
    /// Stops the exchange; the handler hears `reason`.
    func cancel(_ reason: RuntimeError)
}

extension UpstreamTransfer {
    /// Stops the exchange; the handler hears that it was cancelled.
    public func cancel() {
        cancel(.upstream(.cancelled, "the exchange was cancelled"))
    }
}
