import CCurl
import CLibUV
import Glibc
import HTTPWire

/// libcurl's process-wide setup, done once, before the first client.
private let curlGlobalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

/// An HTTP client on libcurl's multi-socket API, driven by one ``EventLoop`` through
/// `uv_poll` and `uv_timer`: no second event loop, no thread pool. TLS, HTTP/2,
/// connection pooling and timeouts come from libcurl.
///
/// Sockets are closed only after their poll handle has closed
/// (`CURLOPT_CLOSESOCKETFUNCTION`), so a descriptor number libcurl reuses never meets a
/// stale `uv_poll`.
///
/// Loop-confined: create it and call ``start(_:handler:)`` on its loop. ``send(_:maxBodyBytes:)``
/// may be called from anywhere.
public final class UpstreamClient: @unchecked Sendable {
    // @unchecked: every stored property is touched only on `loop` (checked by
    // `precondition(loop.inEventLoop)` at each entry point); `send` hops there first.

    /// The loop that drives this client.
    public let loop: EventLoop
    let configuration: UpstreamClientConfiguration
    /// Nil when setting libcurl up failed (``setupError`` says why).
    var multi: CurlMulti?
    var timer: LoopTimer?
    /// Why the client cannot work; every exchange fails with it.
    var setupError: RuntimeError?
    var polls: [Int32: LoopPoll] = [:]
    /// Descriptors whose poll handle is closing; true when libcurl asked to close the socket meanwhile.
    var closingPolls: [Int32: Bool] = [:]
    /// The transfers in the multi handle, by easy handle.
    var transfers: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    var closed = false
    /// The loop shut down: the client is closed for good.
    var loopShutDown = false
    /// Replaced (``retire()``): keeps nothing open while nothing is under way.
    var retired = false
    /// A check of whether a retired client is quiet is scheduled.
    var quietCheckScheduled = false
    /// The loop's own HTTP/1.1 connections, per `http://` origin.
    var http1Pools: [UpstreamOrigin: HTTP1Pool] = [:]
    /// The pool of the last `http://` exchange (``http1Pool(for:)``).
    var lastHTTP1Pool: HTTP1Pool?
    /// How deep the client is in libcurl calls that run callbacks: libcurl refuses to
    /// remove a transfer from inside them, so a transfer cancelled there is removed on the
    /// next turn of the loop.
    var curlDepth = 0
    /// Easy handles kept after use: `curl_easy_reset` keeps their caches, saving setup.
    private var idleHandles: [CurlEasy] = []
    /// Easy handles libcurl would not take out of the multi handle: neither reused nor
    /// cleaned up before the multi handle is.
    private var strandedHandles: [CurlEasy] = []

    /// Creates a client on `loop`. Call on the loop thread. When libcurl or libuv cannot
    /// be set up (out of memory or descriptors), every exchange fails with the reason.
    public init(loop: EventLoop, configuration: UpstreamClientConfiguration = UpstreamClientConfiguration()) {
        precondition(loop.inEventLoop, "UpstreamClient must be created on its loop")
        self.loop = loop
        self.configuration = configuration
        do throws(RuntimeError) {
            try setUp()
        } catch {
            setupError = error
        }
        loop.onShutdown { [self] in
            loopShutDown = true
            close()
        }
    }

    func setUp() throws(RuntimeError) {
        if curlGlobalInit != CURLE_OK { throw .curl(curlGlobalInit, "curl_global_init") }
        let multi = try CurlMulti()
        self.multi = multi
        timer = try LoopTimer(loop: loop.uv) { [unowned self] in act(CURL_SOCKET_TIMEOUT, 0) }
        // The callbacks get the client unretained: it outlives the multi handle, which
        // `close` cleans up.
        try multi.setCallbacks(
            socket: { easy, fd, what, user, _ in
                UpstreamClient.from(user).socketChanged(easy, fd, what)
                return 0
            },
            timer: { _, ms, user in
                UpstreamClient.from(user).timerChanged(ms)
                return 0
            },
            user: Unmanaged.passUnretained(self).toOpaque())
        try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        try multi.set(CURLMOPT_MAXCONNECTS, configuration.maxConnectionsPerHost * 4)
        try multi.set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    /// The client behind a libcurl callback's user pointer.
    private static func from(_ user: UnsafeMutableRawPointer?) -> UpstreamClient {
        // Invariant: libcurl passes back the pointer `setUp` or `CurlTransfer.prepare`
        // registered (never nil), and the client outlives its multi handle.
        Unmanaged<UpstreamClient>.fromOpaque(user!).takeUnretainedValue()
    }

    /// Creates a client on `loop` from any thread.
    public static func make(
        on loop: EventLoop, configuration: UpstreamClientConfiguration = UpstreamClientConfiguration()
    ) async -> UpstreamClient {
        await withCheckedContinuation { cont in
            loop.executeSoonOrNow { cont.resume(returning: UpstreamClient(loop: loop, configuration: configuration)) }
        }
    }

    /// Starts an exchange; `handler` hears about it on this loop. Call on the loop.
    @discardableResult
    public func start(_ request: consuming UpstreamRequest, handler: any UpstreamResponseHandler) -> any UpstreamTransfer {
        precondition(loop.inEventLoop)
        if closed && retired && !loopShutDown { reopen() }
        if configuration.loopHTTP1, configuration.unixSocketPath == nil, !closed,
            let (origin, target) = request.http1Destination
        {
            do throws(RuntimeError) {
                let head = try HTTP1RequestHead.make(request, target: target, origin: origin)
                let pool = http1Pool(for: origin)
                let exchange = HTTP1Exchange(request: request, head: head, pool: pool, handler: handler)
                pool.start(exchange)
                return exchange
            } catch {
                let refused = CurlTransfer(client: self, request: request, handler: handler)
                refused.fail(error)
                return refused
            }
        }
        var request = request
        // libcurl takes a URL: put together once, here, for a request that came without one.
        if case .origin = request.destination { request.destination = .url(request.url) }
        let transfer = CurlTransfer(client: self, request: request, handler: handler)
        if request.upgrade {
            transfer.fail(
                .upstream(
                    .invalidRequest, "an upgrade needs an http:// upstream served by the loop's HTTP/1.1 client; nothing was sent"
                ))
            return transfer
        }
        guard let multi, !closed, setupError == nil else {
            transfer.fail(
                closed
                    ? .upstream(.cancelled, "the upstream client is shut down")
                    : .upstream(.upstreamFailed, "the upstream client could not be set up", underlying: setupError))
            return transfer
        }
        do throws(RuntimeError) {
            let easy = try transfer.prepare()
            try multi.add(easy)
            transfers[easy.handle] = transfer
        } catch {
            transfer.fail(
                error.code.isUpstream ? error : .upstream(.upstreamFailed, "libcurl refused the exchange", underlying: error))
        }
        return transfer
    }

    /// Sends `request` and buffers the whole response (for small exchanges such as token
    /// endpoint calls). Callable from any thread or task.
    public func send(_ request: UpstreamRequest, maxBodyBytes: Int = 1 << 20) async throws(RuntimeError) -> UpstreamResponse {
        let result: Result<UpstreamResponse, RuntimeError> = await withCheckedContinuation { cont in
            loop.executeSoonOrNow { [self] in
                let collector = BufferingHandler(maxBodyBytes: maxBodyBytes, continuation: cont)
                collector.transfer = start(request, handler: collector)
            }
        }
        return try result.get()
    }

    /// Runs `body`, a libcurl call that may call back into the client.
    func inCurl<T>(_ body: () throws(RuntimeError) -> T) throws(RuntimeError) -> T {
        curlDepth += 1
        defer { curlDepth -= 1 }
        return try body()
    }

    func reapCompleted() {
        guard let multi else { return }
        for (easy, result) in multi.completed() {
            guard let transfer = transfers[easy] else { continue }
            detach(transfer)
            transfer.complete(result)
        }
    }

    /// An easy handle: a reset one when available, else a new one.
    func takeHandle() throws(RuntimeError) -> CurlEasy {
        if let easy = idleHandles.popLast() { return easy }
        return try CurlEasy()
    }

    /// Returns an easy handle that is out of the multi handle.
    func recycle(_ easy: CurlEasy) {
        // Dropped ones are cleaned up in their deinit.
        guard !closed, idleHandles.count < 256, !strandedHandles.contains(where: { $0 === easy }) else { return }
        easy.reset()
        idleHandles.append(easy)
    }

    /// Takes `transfer` out of the multi handle (done or cancelled). From inside a libcurl
    /// callback, where libcurl refuses, it happens on the next turn of the loop.
    func detach(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy?.handle, transfers[easy] === transfer, let multi else { return }
        if curlDepth > 0 {
            let client = LoopBound(self, loop: loop)
            let later = LoopBound(transfer, loop: loop)
            loop.execute { client.value.detach(later.value) }
            return
        }
        transfers[easy] = nil
        defer { exchangeEnded() }
        guard let handle = transfer.easy else { return }
        do throws(RuntimeError) {
            try multi.remove(handle)
        } catch {
            // Still in the multi handle: the easy handle must not be reused or cleaned up first.
            strandedHandles.append(handle)
        }
    }

    /// Unpauses after the handler accepts bytes again, or the upload has more.
    func unpause(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy, transfers[easy.handle] === transfer else { return }
        do throws(RuntimeError) {
            try inCurl { () throws(RuntimeError) in try easy.pause(CURLPAUSE_CONT) }
        } catch {
            transfer.cancel(.upstream(.upstreamFailed, "the upstream transfer could not be resumed", underlying: error))
            return
        }
        reapCompleted()
    }

    /// Cancels everything and frees libcurl and libuv resources. Runs at loop shutdown, and
    /// whenever a retired client has nothing under way.
    func close() {
        guard !closed else { return }
        closed = true
        for transfer in Array(transfers.values) {
            detach(transfer)
            transfer.finish(.upstream(.cancelled, "the upstream client shut down"))
        }
        for pool in http1Pools.values { pool.close() }
        lastHTTP1Pool = nil
        timer?.close()
        idleHandles.removeAll()
        do throws(RuntimeError) {
            // libcurl closes its pooled connections here, through `closeSocket`.
            try multi?.close()
        } catch {
            assertionFailure("\(error)")  // nothing is left to tell: the client is going away
        }
        strandedHandles.removeAll()
        for (fd, poll) in polls { closePoll(fd, poll) }
        polls.removeAll()
    }

    /// The closesocket callback shared by every transfer of this client.
    static let closeSocketCallback: ag_closesocket_callback = { user, fd in
        UpstreamClient.from(user).closeSocket(fd)
        return 0
    }
}

/// Collects a whole response for ``UpstreamClient/send(_:maxBodyBytes:)``.
private final class BufferingHandler: UpstreamResponseHandler {
    let maxBodyBytes: Int
    var continuation: CheckedContinuation<Result<UpstreamResponse, RuntimeError>, Never>?
    var response = UpstreamResponse(status: 0, headers: HTTPHeaders(), body: [])
    var transfer: (any UpstreamTransfer)?

    init(maxBodyBytes: Int, continuation: CheckedContinuation<Result<UpstreamResponse, RuntimeError>, Never>) {
        self.maxBodyBytes = maxBodyBytes
        self.continuation = continuation
    }

    func upstreamHead(status: Int, headers: consuming HTTPHeaders) {
        response.status = status
        response.headers = headers
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if response.body.count + bytes.count > maxBodyBytes {
            transfer?.cancel(.upstream(.responseTooLarge, "the upstream response exceeds \(maxBodyBytes) bytes"))
            return true
        }
        response.body.append(contentsOf: bytes)
        return true
    }

    func upstreamFinished(_ error: RuntimeError?) {
        guard let c = continuation else { return }
        continuation = nil
        transfer = nil
        if let error { c.resume(returning: .failure(error)) } else { c.resume(returning: .success(response)) }
    }
}

extension UpstreamClient {
    /// The pool of `origin`, made on first use. The last one used is checked first: a
    /// sidecar's requests nearly all go to one origin, and comparing a route's origin with
    /// itself compares shared strings, with no hashing.
    func http1Pool(for origin: UpstreamOrigin) -> HTTP1Pool {
        if let last = lastHTTP1Pool, last.origin == origin { return last }
        let pool: HTTP1Pool
        if let existing = http1Pools[origin] {
            pool = existing
        } else {
            pool = HTTP1Pool(client: self, origin: origin)
            http1Pools[origin] = pool
        }
        lastHTTP1Pool = pool
        return pool
    }
}
