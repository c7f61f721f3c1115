import HTTPWire
import Runtime

/// How an attempt at the upstream ended.
enum ExchangeOutcome: Sendable {
    /// The upstream response went to the client (whole, or cut short by a failure after its
    /// head), `bytes` of its body.
    case forwarded(status: Int, bytes: Int)
    /// The response, of `status`, was held back from the client as the exchange's machine
    /// said (`why`), and its body discarded.
    case held(HeldAnswer, status: Int)
    /// No response reached the client from the upstream; a problem document did.
    case failed(RuntimeError)
}

/// Why an answer was held back from the client: the three head actions that hold one.
enum HeldAnswer: Sendable, Equatable {
    /// The upstream rejected the token: replayed after a refresh
    /// (``ExchangeMachine/HeadAction/holdForRefresh``).
    case forRefresh
    /// The upstream asked the DPoP proof for a nonce: sent again with it
    /// (``ExchangeMachine/HeadAction/holdForNonce``).
    case forNonce
    /// The upstream refused the proof AuthGate made: the runner answers in its place
    /// (``ExchangeMachine/HeadAction/refuseProof``).
    case proofRefused

    /// Why `action` holds an answer back; nil when it lets the answer go to the client.
    init?(_ action: ExchangeMachine.HeadAction) {
        switch action {
        case .holdForRefresh: self = .forRefresh
        case .holdForNonce: self = .forNonce
        case .refuseProof: self = .proofRefused
        case .deliver, .passThrough: return nil
        }
    }
}

/// What an exchange writes to its client: ``ResponseWriter`` on a client connection (a
/// recorder in the exchange's tests). The loop-only calls are made on the connection's loop.
protocol ClientResponseSink {
    /// Whether the client keeps up with what was written.
    var isWritable: Bool { get }
    /// Runs `handler` once the client has taken most of what was written.
    func whenWritable(_ handler: @escaping () -> Void)
    /// Starts the response.
    func writeHead(status: Int, headers: HTTPHeaders)
    /// Writes body bytes at once; false when the client is behind.
    func writeBodyNow(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Ends the response.
    func end()
    /// Closes the client connection: a response begun cannot be completed.
    func abort()
    /// Answers with a problem document in the upstream's place.
    func respond(problem: Problem, headers: HTTPHeaders)
    /// Sends the upstream's `101` and splices the client connection to `tunnel`; false when
    /// the client connection cannot switch.
    func switchProtocols(
        headers: HTTPHeaders, to tunnel: UpstreamTunnel, idleTimeout: Duration, onEnd: @escaping (String) -> Void
    ) -> Bool
}

extension ResponseWriter: ClientResponseSink {}

/// The request an exchange's attempt belongs to (``ProxiedRequest``): it decides what becomes
/// of the answer's head and hears how the attempt ended.
protocol ExchangeAttemptOwner: AnyObject {
    /// What to do with the head of the answer.
    func decide(status: Int, headers: HTTPHeaders) -> ExchangeMachine.HeadAction
    /// The attempt ended as `outcome`.
    func ended(_ outcome: ExchangeOutcome)
}

/// Streams one upstream response to one client, with backpressure both ways:
/// when the client falls behind, the upstream transfer pauses until it catches up.
/// Loop-confined. Generic over its two ends so that it is tested without sockets; the proxy
/// makes only `ProxyExchange<ResponseWriter, ProxiedRequest>`.
final class ProxyExchange<Writer: ClientResponseSink, Owner: ExchangeAttemptOwner>: UpstreamResponseHandler {
    let writer: Writer
    var transfer: (any UpstreamTransfer)?
    /// The request whose attempt this is: it decides what becomes of the head
    /// (``ProxiedRequest/decide(status:headers:)``) and hears the end (a reference the request
    /// already has, where closures would be allocated per attempt).
    private let runner: Owner
    /// Where an upstream failure is counted.
    private let metrics: GatewayMetrics
    /// The traced try's span, ended with the exchange; nil when tracing is off.
    private let span: RequestTrace.UpstreamTry?
    private var headSent = false
    /// What the machine said of a head kept from the client; nil while nothing is held.
    private var held: HeldAnswer?
    private var status = 0
    private var bytesOut = 0
    private let tunnelIdleTimeout: Duration

    init(
        writer: Writer, tunnelIdleTimeout: Duration, metrics: GatewayMetrics, span: RequestTrace.UpstreamTry?,
        runner: Owner
    ) {
        self.runner = runner
        self.tunnelIdleTimeout = tunnelIdleTimeout
        self.metrics = metrics
        self.span = span
        self.writer = writer
    }

    func upstreamHead(status: Int, headers: consuming HTTPHeaders) {
        self.status = status
        let action = runner.decide(status: status, headers: headers)
        if let why = HeldAnswer(action) {
            held = why
            return
        }
        // The last use of the upstream's fields: they are edited in place, not copied.
        var out = ForwardedHeaders.clientResponse(consume headers)
        if case .passThrough = action {
            for (n, v) in action.extraHeaders { out.replaceOrAdd(name: n, value: v) }
        }
        headSent = true
        writer.writeHead(status: status, headers: out)
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if held != nil { return true }
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
        if writer.switchProtocols(headers: out, to: tunnel, idleTimeout: tunnelIdleTimeout, onEnd: { _ in }) {
            finish(.forwarded(status: 101, bytes: 0))
        } else {
            // The client left while the upstream answered: nobody to splice to.
            finish(.forwarded(status: 499, bytes: 0))
        }
    }

    /// The upstream's part ends here, so the request hears it (and gives back its slot of the
    /// route's limit) before the client gets the end of its answer: a client that sends its
    /// next request as soon as it has one finds the slot free, and the limit's latency sample
    /// is the upstream's alone.
    func upstreamFinished(_ error: RuntimeError?) {
        transfer = nil
        if let held {
            finish(.held(held, status: status))
            return
        }
        if let error {
            if headSent {
                finish(.forwarded(status: status, bytes: bytesOut))
                writer.abort()
            } else {
                finish(.failed(error))
                writer.respond(problem: error.problem, headers: HTTPHeaders())
            }
            return
        }
        finish(.forwarded(status: status, bytes: bytesOut))
        writer.end()
    }
}

extension ProxyExchange {
    /// Ends the exchange: counts an upstream failure, ends the try's span, and tells the
    /// request.
    private func finish(_ outcome: ExchangeOutcome) {
        if case .failed(let e) = outcome { metrics.upstreamFailure(e.code.description) }
        span?.ended(outcome)
        runner.ended(outcome)
    }
}

extension AccessFacts {
    /// What an exchange came to: the upstream's status and the body bytes the client got
    /// (none of a proof the upstream refused, answered by AuthGate instead). A response held
    /// for a replay or a resend is not recorded: the next attempt's is.
    func exchanged(_ outcome: ExchangeOutcome) {
        switch outcome {
        case .forwarded(let status, let bytes): upstreamAnswered(status: status, bytes: bytes)
        case .held(.proofRefused, let status): upstreamAnswered(status: status, bytes: 0)
        case .held, .failed: break
        }
    }
}
