import CLibUV
import Glibc

/// A libuv stream (`uv_stream_t`): a TCP socket (``LoopTCP``) or a Unix domain socket
/// (`uv_pipe_t`, as accepted by ``StreamListener``). Reads, writes and the shutdown of the
/// sending side. Heap allocated, freed in its close callback (``LoopHandle``); closing it
/// closes the socket, stops reading and cancels what is still queued.
///
/// The callbacks (``onRead``, ``onWriteCompleted``, ``onShutdownCompleted``) are set once,
/// so reading, writing and pausing cost no allocation. Reads land in a buffer the caller
/// lends (the loop's read buffer), valid only during ``onRead``. Writes are tried at once
/// (`uv_try_write`); what the kernel does not take is copied and queued (`uv_write`).
///
/// ```swift
/// stream.onRead = { [unowned self] result, bytes in received(result, bytes) }
/// try stream.startReading()
/// ```
class LoopStream: LoopHandle {
    private let readBuffer: UnsafeMutableRawBufferPointer
    /// Runs for each read: the byte count and the bytes (valid during the call only), or a
    /// negative libuv code (`UV_EOF` at the end) and no bytes.
    var onRead: ((_ result: Int, _ bytes: UnsafeRawBufferPointer) -> Void)?
    /// Runs when a queued write completes: its status (0, or a libuv error;
    /// `UV_ECANCELED` when the stream closed first).
    var onWriteCompleted: ((_ status: Int32) -> Void)?
    /// Runs when a ``shutdown()`` completes: its status (0, or a libuv error;
    /// `UV_ECANCELED` when the stream closed first).
    var onShutdownCompleted: ((_ status: Int32) -> Void)?
    /// `uv_write` requests whose callback has not run yet.
    private(set) var queuedWrites = 0

    /// Allocates a stream of type `Handle` and initialises it by `initialise` (a
    /// `uv_tcp_init` or `uv_pipe_init` call); reads go into `readBuffer`.
    init<Handle>(
        _ type: Handle.Type, _ operation: String, readBuffer: UnsafeMutableRawBufferPointer,
        _ initialise: (UnsafeMutablePointer<Handle>) -> Int32
    ) throws(RuntimeError) {
        self.readBuffer = readBuffer
        try super.init(type, operation, initialise)
    }

    /// Creates an unconnected Unix domain socket handle on `loop` (to accept into).
    convenience init(pipe loop: UnsafeMutablePointer<uv_loop_t>, readBuffer: UnsafeMutableRawBufferPointer)
        throws(RuntimeError)
    {
        try self.init(uv_pipe_t.self, "uv_pipe_init", readBuffer: readBuffer) { uv_pipe_init(loop, $0, 0) }
    }

    /// The handle as a stream.
    var stream: UnsafeMutablePointer<uv_stream_t> { typed(uv_stream_t.self) }

    /// Starts reading into ``onRead``. Throws when the stream is closing or libuv refuses
    /// (reading twice is harmless: libuv 1.44 accepts it).
    func startReading() throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_read_start") }
        let rc = uv_read_start(
            stream,
            { handle, _, buf in
                // Invariant: libuv passes the handle being read and a descriptor to fill;
                // the lent buffer outlives every stream of its loop.
                let owner = LoopHandle.owner(LoopStream.self, handle)
                buf!.pointee = uv_buf_init(
                    owner.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(owner.readBuffer.count))
            },
            { handle, nread, buf in
                // Invariant: as above; `buf` is the buffer the allocation callback gave.
                let owner = LoopHandle.owner(LoopStream.self, handle)
                if nread == 0 { return }  // EAGAIN: nothing read
                owner.onRead?(nread, UnsafeRawBufferPointer(start: buf!.pointee.base, count: max(0, nread)))
            })
        try RuntimeError.check(rc, "uv_read_start")
    }

    /// Stops reading until ``startReading()``.
    func stopReading() {
        guard !isClosing else { return }
        // uv_read_stop returns 0 on every libuv this code knows.
        let rc = uv_read_stop(stream)
        precondition(rc == 0, "uv_read_stop returned \(rc)")
    }

    /// Bytes queued in libuv, not yet taken by the kernel (0 once closing).
    var queuedBytes: Int { isClosing ? 0 : uv_stream_get_write_queue_size(stream) }

    /// Writes `bytes`; true when the kernel took them all at once. Otherwise the rest is
    /// copied and queued, and ``onWriteCompleted`` hears about it. Nothing is tried at once
    /// while earlier writes wait, so bytes leave in order. Throws when libuv refuses (the
    /// peer is gone, the stream is closing); nothing is queued then.
    @discardableResult
    func write(_ bytes: UnsafeRawBufferPointer) throws(RuntimeError) -> Bool {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_write") }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        var offset = 0
        if queuedWrites == 0 {
            var buf = uv_buf_init(UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self)), UInt32(bytes.count))
            let n = uv_try_write(stream, &buf, 1)
            if n > 0 { offset = Int(n) }
            if offset == bytes.count { return true }
            if n < 0 && n != UV_EAGAIN.rawValue { throw .libuv(n, "uv_try_write") }
        }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count - offset, alignment: 1)
        copy.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        let req = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        req.pointee.data = copy.baseAddress
        // Invariant: the copy holds at least one byte, so its address is not nil.
        var buf = uv_buf_init(copy.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(copy.count))
        let rc = uv_write(req, stream, &buf, 1) { req, status in
            // Invariant: libuv passes back the request, whose `data` is the copy and whose
            // handle is this one's (open until its close callback, which runs after this).
            req!.pointee.data.deallocate()
            let owner = LoopHandle.owner(LoopStream.self, req!.pointee.handle)
            req!.deallocate()
            owner.queuedWrites -= 1
            owner.onWriteCompleted?(status)
        }
        if rc < 0 {
            copy.deallocate()
            req.deallocate()
            throw .libuv(rc, "uv_write")
        }
        queuedWrites += 1
        return false
    }

    /// Shuts down the sending side once the queued writes are out; ``onShutdownCompleted``
    /// hears the outcome. Throws when the shutdown cannot start (then nothing is heard).
    func shutdown() throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_shutdown") }
        try LoopStream.request(uv_shutdown_t.self, "uv_shutdown") { req in
            uv_shutdown(req, stream) { req, status in
                LoopStream.finished(req, LoopStream.self) { $0.handle }.onShutdownCompleted?(status)
            }
        }
    }

    /// Allocates a request (`uv_connect_t`, `uv_shutdown_t`) and starts it by `start`;
    /// frees it and throws `operation`'s error when libuv refuses (then no callback runs).
    static func request<Request>(
        _: Request.Type, _ operation: String, _ start: (UnsafeMutablePointer<Request>) -> Int32
    ) throws(RuntimeError) {
        let req = UnsafeMutablePointer<Request>.allocate(capacity: 1)
        let rc = start(req)
        if rc < 0 {
            req.deallocate()
            throw .libuv(rc, operation)
        }
    }

    /// The owner of the stream a completed ``request(_:_:_:)`` was made on (read from the
    /// request by `handle`); frees the request, which libuv is done with.
    static func finished<Request, Owner: LoopStream>(
        _ req: UnsafeMutablePointer<Request>?, _: Owner.Type, _ handle: (Request) -> UnsafeMutablePointer<uv_stream_t>?
    ) -> Owner {
        // Invariant: libuv passes back the request it was given (never nil), whose handle
        // is the stream it was made on, open until its close callback, which runs after
        // every request's callback.
        let owner = LoopHandle.owner(Owner.self, handle(req!.pointee))
        req!.deallocate()
        return owner
    }

    override func willClose() {
        onRead = nil
        onWriteCompleted = nil
        onShutdownCompleted = nil
    }
}
