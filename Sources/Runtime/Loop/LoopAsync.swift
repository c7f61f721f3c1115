import CLibUV

/// A libuv async handle (`uv_async_t`): the one way another thread wakes the loop.
/// Heap allocated, freed in its close callback (``LoopHandle``).
///
/// libuv coalesces sends: several ``send()`` calls before the loop wakes run the closure
/// once.
final class LoopAsync: LoopHandle {
    private var onWake: (() -> Void)?

    /// Creates the handle on `loop`; `onWake` runs on the loop after ``send()``.
    init(loop: UnsafeMutablePointer<uv_loop_t>, _ onWake: @escaping () -> Void) throws(RuntimeError) {
        self.onWake = onWake
        try super.init(uv_async_t.self, "uv_async_init") { handle in
            uv_async_init(loop, handle) { h in LoopHandle.owner(LoopAsync.self, h).onWake?() }
        }
    }

    /// Wakes the loop. The one method callable from any thread; the caller guarantees the
    /// handle is not closed meanwhile (``EventLoop`` sends under the lock that also closes
    /// its queue).
    func send() throws(RuntimeError) {
        try RuntimeError.check(uv_async_send(typed(uv_async_t.self)), "uv_async_send")
    }

    override func willClose() {
        onWake = nil
    }
}
