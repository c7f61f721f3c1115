public import HTTPWire
public import Runtime
import Synchronization

/// Forwards requests under configured prefixes to their upstreams, streaming bodies both
/// ways. Each loop has its own ``UpstreamClient``, so a request never leaves its loop.
public final class ReverseProxy: HTTPResponder {
    /// The routes, longest prefix first.
    public let routes: [ProxyRoute]
    private let clientConfiguration: UpstreamClientConfiguration
    private let clients = Mutex<[ObjectIdentifier: UpstreamClient]>([:])
    private let fallback: (any HTTPResponder)?

    /// Creates a proxy; requests matching no route go to `fallback` (or get 404).
    public init(
        routes: [ProxyRoute], clientConfiguration: UpstreamClientConfiguration = UpstreamClientConfiguration(),
        fallback: (any HTTPResponder)? = nil
    ) {
        self.routes = routes.sorted { $0.prefix.count > $1.prefix.count }
        self.clientConfiguration = clientConfiguration
        self.fallback = fallback
    }

    /// The route for a path, if any.
    public func route(for path: Substring) -> ProxyRoute? {
        routes.first { $0.matches(path) }
    }

    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        if let target = try? RequestTarget(head.target), route(for: target.path) != nil { return .stream }
        return fallback?.bodyPolicy(for: head, limits: limits) ?? .buffer(maxBytes: limits.maxBufferedBodyBytes)
    }

    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        let target: RequestTarget
        do throws(WireError) {
            target = try RequestTarget(request.head.target)
        } catch {
            writer.respond(problem: error.problem)
            return
        }
        guard let route = route(for: target.path) else {
            if let fallback {
                fallback.respond(to: request, writer: writer)
            } else {
                writer.respond(problem: GatewayProblem.noRoute)
            }
            return
        }
        let body: UpstreamRequestBody
        switch request.body {
        case .buffered(let bytes): body = bytes.isEmpty ? .none : .bytes(bytes)
        case .stream(let s):
            switch request.head.framing {
            case .none: body = .none
            case .length(let n): body = .stream(s, length: n)
            case .chunked: body = .stream(s, length: nil)
            }
        }
        var headers = ForwardedHeaders.upstreamRequest(
            request.head.headers, clientAddress: request.remoteAddress, upstreamAuthority: route.upstream.authority,
            removeAuthorization: false)
        for (name, value) in route.injectHeaders { headers.replaceOrAdd(name: name, value: value) }
        let upstream = UpstreamRequest(
            method: request.head.method, url: route.upstreamURL(path: target.path, query: target.query), headers: headers,
            body: body)
        let exchange = ProxyExchange(writer: writer)
        let transfer = client(for: request.loop).start(upstream, handler: exchange)
        if !transfer.isFinished {
            exchange.transfer = transfer
            let bound = LoopBound(transfer, loop: request.loop)
            writer.onClientGone { bound.value.cancel() }
        }
    }

    /// The client of `loop`, created on first use. Call on `loop`.
    func client(for loop: EventLoop) -> UpstreamClient {
        let id = ObjectIdentifier(loop)
        if let c = clients.withLock({ $0[id] }) { return c }
        let c = UpstreamClient(loop: loop, configuration: clientConfiguration)
        clients.withLock { $0[id] = c }
        return c
    }
}
