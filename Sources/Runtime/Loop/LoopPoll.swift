import CLibUV
import Glibc

/// A libuv poll handle (`uv_poll_t`) watching one socket for readability and
/// writability. Heap allocated, freed in its close callback (``LoopHandle``).
///
/// Closing the handle does not close the socket: whoever owns the socket closes it, and
/// only after the close callback (``close(then:)``), so that a descriptor number the
/// kernel hands out again never meets this watcher.
final class LoopPoll: LoopHandle {
    /// The socket watched.
    let descriptor: Int32
    private var onEvent: ((_ status: Int32, _ events: Int32) -> Void)?

    /// Watches `socket` on `loop`; `onEvent` receives libuv's status (negative on an error)
    /// and the events that are ready (`UV_READABLE`, `UV_WRITABLE`). Throws when libuv
    /// cannot watch the descriptor (`EBADF` for one that is not open, `EPERM` for a
    /// regular file).
    init(
        loop: UnsafeMutablePointer<uv_loop_t>, socket: Int32, _ onEvent: @escaping (_ status: Int32, _ events: Int32) -> Void
    ) throws(RuntimeError) {
        descriptor = socket
        self.onEvent = onEvent
        try super.init(uv_poll_t.self, "uv_poll_init_socket") { uv_poll_init_socket(loop, $0, socket) }
    }

    /// Watches for `events` (a mask of `UV_READABLE` and `UV_WRITABLE`), replacing what
    /// was watched. Throws when the handle is closing or libuv refuses.
    func start(_ events: Int32) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_poll_start") }
        let rc = uv_poll_start(typed(uv_poll_t.self), events) { p, status, events in
            LoopHandle.owner(LoopPoll.self, p).onEvent?(status, events)
        }
        try RuntimeError.check(rc, "uv_poll_start")
    }

    /// Stops watching; ``start(_:)`` may watch again.
    func stop() {
        guard !isClosing else { return }
        // libuv 1.44's uv_poll_stop returns 0 whatever the state.
        let rc = uv_poll_stop(typed(uv_poll_t.self))
        precondition(rc == 0, "uv_poll_stop returned \(rc)")
    }

    override func willClose() {
        stop()
        onEvent = nil
    }
}
