import CLibUV
import Glibc

/// A libuv TCP handle (`uv_tcp_t`) used as a client: connect, read, write. Heap
/// allocated, freed in its close callback (``LoopHandle``); closing it closes the socket.
///
/// Reads land in a buffer the caller lends (the loop's read buffer), valid only during the
/// callback. Writes are tried at once (`uv_try_write`); what the kernel does not take is
/// copied and queued (`uv_write`).
final class LoopTCP: LoopHandle {
    private let readBuffer: UnsafeMutableRawBufferPointer
    private var onRead: ((_ result: Int, _ bytes: UnsafeRawBufferPointer) -> Void)?
    private var onConnect: ((_ status: Int32) -> Void)?
    private var onShutdown: ((_ status: Int32) -> Void)?
    /// Runs when a queued write completes: its status (0, or a libuv error).
    var onWriteCompleted: ((_ status: Int32) -> Void)?
    /// `uv_write` requests whose callback has not run yet.
    private(set) var queuedWrites = 0

    /// Creates an unconnected handle on `loop`; reads go into `readBuffer`.
    init(loop: UnsafeMutablePointer<uv_loop_t>, readBuffer: UnsafeMutableRawBufferPointer) throws(RuntimeError) {
        self.readBuffer = readBuffer
        try super.init(uv_tcp_t.self, "uv_tcp_init") { uv_tcp_init(loop, $0) }
    }

    private var tcp: UnsafeMutablePointer<uv_tcp_t> { typed(uv_tcp_t.self) }
    private var stream: UnsafeMutablePointer<uv_stream_t> { typed(uv_stream_t.self) }

    /// Connects to `address`; `done` gets 0 or a libuv error. Throws when the connection
    /// cannot even start (then `done` never runs).
    func connect(to address: UnsafePointer<sockaddr>, _ done: @escaping (_ status: Int32) -> Void) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_tcp_connect") }
        let req = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        let rc = uv_tcp_connect(req, tcp, address) { req, status in
            // Invariant: libuv passes back the request, whose handle is this one's.
            let owner = LoopHandle.owner(LoopTCP.self, req!.pointee.handle)
            req!.deallocate()
            let done = owner.onConnect
            owner.onConnect = nil
            done?(status)
        }
        if rc < 0 {
            req.deallocate()
            throw .libuv(rc, "uv_tcp_connect")
        }
        onConnect = done
        // Small requests and responses: no Nagle delay (failure only costs latency).
        _ = uv_tcp_nodelay(tcp, 1)
    }

    /// Starts reading: `onRead` gets the byte count and the bytes, or a negative libuv
    /// code (`UV_EOF` at the end). Replaces a previous callback.
    func startReading(_ onRead: @escaping (_ result: Int, _ bytes: UnsafeRawBufferPointer) -> Void) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_read_start") }
        self.onRead = onRead
        let rc = uv_read_start(
            stream,
            { handle, _, buf in
                // Invariant: libuv passes the handle being read and a descriptor to fill.
                let owner = LoopHandle.owner(LoopTCP.self, handle)
                buf!.pointee = uv_buf_init(
                    owner.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(owner.readBuffer.count))
            },
            { handle, nread, buf in
                // Invariant: as above; `buf` is the buffer the allocation callback gave.
                let owner = LoopHandle.owner(LoopTCP.self, handle)
                if nread == 0 { return }  // EAGAIN: nothing read
                let count = max(0, nread)
                owner.onRead?(nread, UnsafeRawBufferPointer(start: buf!.pointee.base, count: count))
            })
        try RuntimeError.check(rc, "uv_read_start")
    }

    /// Stops reading until ``startReading(_:)``.
    func stopReading() {
        guard !isClosing else { return }
        // uv_read_stop returns 0 on every libuv this code knows.
        let rc = uv_read_stop(stream)
        precondition(rc == 0, "uv_read_stop returned \(rc)")
    }

    /// Bytes queued in libuv, not yet taken by the kernel.
    var queuedBytes: Int { isClosing ? 0 : uv_stream_get_write_queue_size(stream) }

    /// Writes `bytes`; true when the kernel took them all at once. Otherwise the rest is
    /// queued and ``onWriteCompleted`` hears about it. Throws when libuv refuses.
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
        var buf = uv_buf_init(copy.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(copy.count))
        let rc = uv_write(req, stream, &buf, 1) { req, status in
            // Invariant: libuv passes back the request, whose `data` is the copy and whose
            // handle is this one's.
            req!.pointee.data.deallocate()
            let owner = LoopHandle.owner(LoopTCP.self, req!.pointee.handle)
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

    /// Shuts down the sending side once the queued writes are out; `done` gets 0 or a
    /// libuv error (`UV_ECANCELED` when the handle closes first). Throws when the shutdown
    /// cannot start (then `done` never runs).
    func shutdown(_ done: @escaping (_ status: Int32) -> Void) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_shutdown") }
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let rc = uv_shutdown(req, stream) { req, status in
            // Invariant: libuv passes back the request, whose handle is this one's (open
            // until its close callback, which runs after this one).
            let owner = LoopHandle.owner(LoopTCP.self, req!.pointee.handle)
            req!.deallocate()
            let done = owner.onShutdown
            owner.onShutdown = nil
            done?(status)
        }
        if rc < 0 {
            req.deallocate()
            throw .libuv(rc, "uv_shutdown")
        }
        onShutdown = done
    }

    override func willClose() {
        onShutdown = nil
        onRead = nil
        onConnect = nil
        onWriteCompleted = nil
    }
}
