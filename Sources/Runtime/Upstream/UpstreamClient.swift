import CCurl
import CLibUV
import Glibc
import HTTPWire

private let curlReady: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK

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
    private let multi: UnsafeMutableRawPointer
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var polls: [Int32: UnsafeMutablePointer<uv_poll_t>] = [:]
    /// Descriptors whose poll handle is closing; true when libcurl asked to close the socket meanwhile.
    private var closingPolls: [Int32: Bool] = [:]
    private var pollDescriptors: [UnsafeMutablePointer<uv_poll_t>: Int32] = [:]
    private var transfers: [ObjectIdentifier: UpstreamTransfer] = [:]
    private var closed = false
    /// Easy handles kept after use: `curl_easy_reset` keeps their caches, saving setup.
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// libuv handles not yet closed (the timer and every poll); the client stays alive
    /// until they are, since their callbacks point at it.
    private var openHandles = 1
    private var keepAlive: Unmanaged<UpstreamClient>?

    /// Creates a client on `loop`. Call on the loop thread.
    public init(loop: EventLoop, configuration: UpstreamClientConfiguration = UpstreamClientConfiguration()) {
        precondition(loop.inEventLoop, "UpstreamClient must be created on its loop")
        precondition(curlReady, "curl_global_init failed")
        self.loop = loop
        self.configuration = configuration
        multi = curl_multi_init()!
        timer = .allocate(capacity: 1)
        uv_timer_init(loop.uv, timer)
        let me = Unmanaged.passUnretained(self).toOpaque()
        timer.pointee.data = me
        ag_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me)
        ag_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me)
        ag_multi_setopt_socket_callback(multi) { _, fd, what, user, _ in
            Unmanaged<UpstreamClient>.fromOpaque(user!).takeUnretainedValue().socketChanged(fd, what)
            return 0
        }
        ag_multi_setopt_timer_callback(multi) { _, ms, user in
            Unmanaged<UpstreamClient>.fromOpaque(user!).takeUnretainedValue().timerChanged(ms)
            return 0
        }
        ag_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        ag_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxConnectionsPerHost * 4)
        ag_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        loop.onShutdown { [self] in close() }
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
    public func start(_ request: UpstreamRequest, handler: any UpstreamResponseHandler) -> UpstreamTransfer {
        precondition(loop.inEventLoop)
        let transfer = UpstreamTransfer(client: self, request: request, handler: handler)
        if closed {
            transfer.fail(UpstreamError(.cancelled, "the upstream client is shut down"))
            return transfer
        }
        if let error = transfer.prepare() {
            transfer.fail(error)
            return transfer
        }
        transfers[ObjectIdentifier(transfer)] = transfer
        let rc = curl_multi_add_handle(multi, transfer.easy)
        if rc != CURLM_OK {
            transfers[ObjectIdentifier(transfer)] = nil
            transfer.finish(UpstreamError(.other, "curl_multi_add_handle: \(String(cString: curl_multi_strerror(rc)))"))
        }
        return transfer
    }

    /// Sends `request` and buffers the whole response (for small exchanges such as token
    /// endpoint calls). Callable from any thread or task.
    public func send(_ request: UpstreamRequest, maxBodyBytes: Int = 1 << 20) async throws(UpstreamError) -> UpstreamResponse {
        let result: Result<UpstreamResponse, UpstreamError> = await withCheckedContinuation { cont in
            loop.executeSoonOrNow { [self] in
                let collector = BufferingHandler(maxBodyBytes: maxBodyBytes, continuation: cont)
                collector.transfer = start(request, handler: collector)
            }
        }
        return try result.get()
    }

    // MARK: libcurl → libuv

    private func socketChanged(_ fd: curl_socket_t, _ what: Int32) {
        guard let poll = polls[fd] ?? newPoll(fd) else { return }
        if what == CURL_POLL_REMOVE {
            // libcurl keeps the connection (idle in its pool) or is about to close it.
            // Keep the handle, stopped, until the socket is really closed: reusing it
            // saves a handle, an ioctl and a close per request on a kept-alive connection.
            uv_poll_stop(poll)
            return
        }
        var events: Int32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= Int32(UV_READABLE.rawValue) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= Int32(UV_WRITABLE.rawValue) }
        uv_poll_start(poll, events) { p, status, events in
            let client = Unmanaged<UpstreamClient>.fromOpaque(p!.pointee.data).takeUnretainedValue()
            guard let fd = client.pollDescriptors[p!] else { return }
            var flags: Int32 = 0
            if status < 0 { flags |= CURL_CSELECT_ERR }
            if events & Int32(UV_READABLE.rawValue) != 0 { flags |= CURL_CSELECT_IN }
            if events & Int32(UV_WRITABLE.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
            client.act(fd, flags)
        }
    }

    private func newPoll(_ fd: curl_socket_t) -> UnsafeMutablePointer<uv_poll_t>? {
        let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        guard uv_poll_init_socket(loop.uv, poll, fd) == 0 else {
            poll.deallocate()
            return nil
        }
        poll.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        polls[fd] = poll
        pollDescriptors[poll] = fd
        openHandles += 1
        return poll
    }

    private func pollClosed(_ poll: UnsafeMutablePointer<uv_poll_t>) {
        let fd = pollDescriptors.removeValue(forKey: poll) ?? -1
        poll.deallocate()
        if closingPolls.removeValue(forKey: fd) == true {
            Glibc.close(fd)
        }
        handleClosed()
    }

    private func handleClosed() {
        openHandles -= 1
        if openHandles == 0, let k = keepAlive {
            keepAlive = nil
            k.release()
        }
    }

    /// libcurl wants to close `fd`: defer it while its poll handle is still open or closing.
    fileprivate func closeSocket(_ fd: curl_socket_t) {
        if let poll = polls.removeValue(forKey: fd) {
            uv_poll_stop(poll)
            closingPolls[fd] = true
            uv_close(UnsafeMutablePointer(OpaquePointer(poll))) { h in
                let poll = UnsafeMutablePointer<uv_poll_t>(OpaquePointer(h!))
                let client = Unmanaged<UpstreamClient>.fromOpaque(poll.pointee.data).takeUnretainedValue()
                client.pollClosed(poll)
            }
        } else if closingPolls[fd] != nil {
            closingPolls[fd] = true
        } else {
            Glibc.close(fd)
        }
    }

    private func timerChanged(_ ms: Int) {
        if ms < 0 {
            uv_timer_stop(timer)
        } else {
            uv_timer_start(timer, { t in
                let client = Unmanaged<UpstreamClient>.fromOpaque(t!.pointee.data).takeUnretainedValue()
                client.act(CURL_SOCKET_TIMEOUT, 0)
            }, UInt64(ms), 0)
        }
    }

    private func act(_ fd: curl_socket_t, _ flags: Int32) {
        guard !closed else { return }
        var running: Int32 = 0
        curl_multi_socket_action(multi, fd, flags, &running)
        reapCompleted()
    }

    private func reapCompleted() {
        var pending: Int32 = 0
        while let msg = curl_multi_info_read(multi, &pending) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = msg.pointee.data.result
            var raw: UnsafeMutableRawPointer?
            ag_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &raw)
            guard let raw else { continue }
            let transfer = Unmanaged<UpstreamTransfer>.fromOpaque(raw).takeUnretainedValue()
            detach(transfer)
            transfer.complete(code)
        }
    }

    /// An easy handle: a reset one when available, else a new one.
    func takeHandle() -> UnsafeMutableRawPointer {
        idleHandles.popLast() ?? curl_easy_init()!
    }

    /// Returns an easy handle that is out of the multi handle.
    func recycle(_ easy: UnsafeMutableRawPointer) {
        if closed || idleHandles.count >= 256 {
            curl_easy_cleanup(easy)
        } else {
            curl_easy_reset(easy)
            idleHandles.append(easy)
        }
    }

    /// Takes `transfer` out of the multi handle (done or cancelled).
    func detach(_ transfer: UpstreamTransfer) {
        guard transfers.removeValue(forKey: ObjectIdentifier(transfer)) != nil else { return }
        curl_multi_remove_handle(multi, transfer.easy)
    }

    /// Unpauses after the handler accepts bytes again, or the upload has more.
    func unpause(_ transfer: UpstreamTransfer) {
        guard transfers[ObjectIdentifier(transfer)] != nil else { return }
        curl_easy_pause(transfer.easy, CURLPAUSE_CONT)
        reapCompleted()
    }

    /// Cancels everything and frees libcurl and libuv resources. Runs at loop shutdown.
    func close() {
        guard !closed else { return }
        closed = true
        keepAlive = Unmanaged.passRetained(self)
        for transfer in Array(transfers.values) {
            detach(transfer)
            transfer.finish(UpstreamError(.cancelled, "the upstream client shut down"))
        }
        uv_timer_stop(timer)
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
        curl_multi_cleanup(multi)
        for (fd, poll) in polls {
            uv_poll_stop(poll)
            closingPolls[fd] = true
            uv_close(UnsafeMutablePointer(OpaquePointer(poll))) { h in
                let poll = UnsafeMutablePointer<uv_poll_t>(OpaquePointer(h!))
                let client = Unmanaged<UpstreamClient>.fromOpaque(poll.pointee.data).takeUnretainedValue()
                client.pollClosed(poll)
            }
        }
        polls.removeAll()
        uv_close(UnsafeMutablePointer(OpaquePointer(timer))) { h in
            let client = Unmanaged<UpstreamClient>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            h!.deallocate()
            client.handleClosed()
        }
    }

    /// The closesocket callback shared by every transfer of this client.
    static let closeSocketCallback: ag_closesocket_callback = { user, fd in
        Unmanaged<UpstreamClient>.fromOpaque(user!).takeUnretainedValue().closeSocket(fd)
        return 0
    }
}

/// Collects a whole response for ``UpstreamClient/send(_:maxBodyBytes:)``.
private final class BufferingHandler: UpstreamResponseHandler {
    let maxBodyBytes: Int
    var continuation: CheckedContinuation<Result<UpstreamResponse, UpstreamError>, Never>?
    var response = UpstreamResponse(status: 0, headers: HTTPHeaders(), body: [])
    var transfer: UpstreamTransfer?

    init(maxBodyBytes: Int, continuation: CheckedContinuation<Result<UpstreamResponse, UpstreamError>, Never>) {
        self.maxBodyBytes = maxBodyBytes
        self.continuation = continuation
    }

    func upstreamHead(status: Int, headers: HTTPHeaders) {
        response.status = status
        response.headers = headers
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if response.body.count + bytes.count > maxBodyBytes {
            transfer?.cancel(UpstreamError(.responseTooLarge, "the upstream response exceeds \(maxBodyBytes) bytes"))
            return true
        }
        response.body.append(contentsOf: bytes)
        return true
    }

    func upstreamFinished(_ error: UpstreamError?) {
        guard let c = continuation else { return }
        continuation = nil
        transfer = nil
        if let error { c.resume(returning: .failure(error)) } else { c.resume(returning: .success(response)) }
    }
}
