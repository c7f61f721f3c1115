import HTTPWire
import Runtime

/// How an exchange ended.
enum ExchangeOutcome: Sendable {
    /// The upstream response went to the client (whole, or cut short by a failure after its
    /// head), `bytes` of its body.
    case forwarded(status: Int, bytes: Int)
    /// The response was held back (a token rejection to answer with refresh and replay).
    case intercepted
    /// The response was held back: the upstream asked the DPoP proof for its nonce, and the
    /// request goes again with the same token (``DPoPNonceRule``).
    case nonceRequested
    /// No response reached the client from the upstream; a problem document did.
    case failed(RuntimeError)
}

/// What to do with a response once its head is known.
enum HeadDecision {
    /// Send it to the client, with these extra header fields.
    case forward(HTTPHeaders)
    /// Keep it from the client and discard its body.
    case intercept
    /// Keep it from the client and discard its body; the request goes again with a proof
    /// carrying the nonce the upstream asked for.
    case resendWithNonce
    /// Keep it from the client and discard its body; the client gets this problem instead.
    case answer(Problem)
}

/// Streams one upstream response to one client, with backpressure both ways:
/// when the client falls behind, the upstream transfer pauses until it catches up.
/// Loop-confined.
final class ProxyExchange: UpstreamResponseHandler {
    let writer: ResponseWriter
    var transfer: (any UpstreamTransfer)?
    /// Told how a public exchange ended.
    private let completion: ((ExchangeOutcome) -> Void)?
    /// The authenticated request whose attempt this is: it decides what becomes of the head
    /// (``AuthenticatedRequest/decide(status:headers:)``) and hears the end, in place of
    /// `completion` (a reference the request already has, where closures would be
    /// allocated per attempt).
    private let runner: AuthenticatedRequest?
    /// Where an upstream failure is counted; nil: not counted.
    private let metrics: GatewayMetrics?
    /// The traced try's span, ended with the exchange; nil when tracing is off.
    private let span: RequestTrace.UpstreamTry?
    private var headSent = false
    private var intercepted = false
    private var resendWithNonce = false
    private var replacement: Problem?
    private var status = 0
    private var bytesOut = 0
    private let tunnelIdleTimeout: Duration

    init(
        writer: ResponseWriter, tunnelIdleTimeout: Duration = .seconds(300),
        metrics: GatewayMetrics? = nil, span: RequestTrace.UpstreamTry? = nil, runner: AuthenticatedRequest? = nil,
        completion: ((ExchangeOutcome) -> Void)? = nil
    ) {
        self.runner = runner
        self.tunnelIdleTimeout = tunnelIdleTimeout
        self.metrics = metrics
        self.span = span
        self.writer = writer
        self.completion = completion
    }

    func upstreamHead(status: Int, headers: consuming HTTPHeaders) {
        self.status = status
        let decision = runner?.decide(status: status, headers: headers) ?? .forward(HTTPHeaders())
        switch decision {
        case .intercept:
            intercepted = true
            return
        case .resendWithNonce:
            intercepted = true
            resendWithNonce = true
            return
        case .answer(let problem):
            intercepted = true
            replacement = problem
            return
        case .forward:
            break
        }
        // The last use of the upstream's fields: they are edited in place, not copied.
        var out = ForwardedHeaders.clientResponse(consume headers)
        if case .forward(let extra) = decision {
            for (n, v) in extra { out.replaceOrAdd(name: n, value: v) }
        }
        headSent = true
        writer.writeHead(status: status, headers: out)
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if intercepted { return true }
        guard writer.isWritable else {
            writer.whenWritable { [weak self] in self?.transfer?.resume() }
            return false
        }
        _ = writer.writeBodyNow(bytes)
        bytesOut += bytes.count
        return true
    }

    /// The upstream switched protocols: its `101` goes to the client and the two connections
    /// are spliced. The exchange counts as one request answered 101, done now (the splice
    /// goes on without holding a route's in-flight slot).
    func upstreamSwitched(headers: HTTPHeaders, tunnel: UpstreamTunnel) {
        transfer = nil
        status = 101
        var out = ForwardedHeaders.clientResponse(headers)
        if let proto = headers[first: "upgrade"] {
            out.replaceOrAdd(name: "Connection", value: "Upgrade")
            out.replaceOrAdd(name: "Upgrade", value: proto)
        }
        if writer.switchProtocols(headers: out, to: tunnel, idleTimeout: tunnelIdleTimeout) {
            finish(.forwarded(status: 101, bytes: 0))
        } else {
            // The client left while the upstream answered: nobody to splice to.
            finish(.forwarded(status: 499, bytes: 0))
        }
    }

    func upstreamFinished(_ error: RuntimeError?) {
        transfer = nil
        if let replacement {
            writer.respond(problem: replacement)
            finish(.forwarded(status: replacement.status, bytes: 0))
            return
        }
        if intercepted {
            finish(resendWithNonce ? .nonceRequested : .intercepted)
            return
        }
        if let error {
            if headSent {
                writer.abort()
                finish(.forwarded(status: status, bytes: bytesOut))
            } else {
                writer.respond(problem: error.problem)
                finish(.failed(error))
            }
            return
        }
        writer.end()
        finish(.forwarded(status: status, bytes: bytesOut))
    }
}

extension ProxyExchange {
    /// Ends the exchange: counts an upstream failure, ends the try's span, and tells the
    /// caller. Done here rather than in a closure wrapped around the caller's, so that an
    /// exchange carries one closure, not two.
    private func finish(_ outcome: ExchangeOutcome) {
        if case .failed(let e) = outcome { metrics?.upstreamFailure(e.code.description) }
        span?.ended(outcome)
        runner?.ended(outcome)
        completion?(outcome)
    }
}

extension AccessFacts {
    /// What an exchange came to: the upstream's status and the body bytes the client got.
    func exchanged(_ outcome: ExchangeOutcome) {
        if case .forwarded(let status, let bytes) = outcome { upstreamAnswered(status: status, bytes: bytes) }
    }
}
