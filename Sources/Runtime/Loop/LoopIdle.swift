import CLibUV
import Glibc

/// A libuv idle handle (`uv_idle_t`): while started, its closure runs once per loop turn,
/// and the loop polls for I/O without blocking. Heap allocated, freed in its close
/// callback (``LoopHandle``).
final class LoopIdle: LoopHandle {
    private var onIdle: (() -> Void)?

    /// Creates a stopped idle handle on `loop`; `onIdle` runs on each turn while started.
    init(loop: UnsafeMutablePointer<uv_loop_t>, _ onIdle: @escaping () -> Void) throws(RuntimeError) {
        self.onIdle = onIdle
        try super.init(uv_idle_t.self, "uv_idle_init") { uv_idle_init(loop, $0) }
    }

    /// Starts running the closure on each turn. Throws when the handle is closing.
    func start() throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_idle_start") }
        let rc = uv_idle_start(typed(uv_idle_t.self)) { h in LoopHandle.owner(LoopIdle.self, h).onIdle?() }
        try RuntimeError.check(rc, "uv_idle_start")
    }

    /// Stops running the closure.
    func stop() {
        guard !isClosing else { return }
        // libuv 1.44's uv_idle_stop returns 0 whatever the state.
        let rc = uv_idle_stop(typed(uv_idle_t.self))
        precondition(rc == 0, "uv_idle_stop returned \(rc)")
    }

    override func willClose() {
        stop()
        onIdle = nil
    }
}
