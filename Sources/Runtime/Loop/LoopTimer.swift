import CLibUV
import Glibc

/// A libuv timer (`uv_timer_t`): runs a closure on the loop once after a delay, or
/// repeatedly. Heap allocated, freed in its close callback (``LoopHandle``).
///
/// ```swift
/// let timer = try LoopTimer(loop: loop.uv)
/// try timer.start(after: 250) { print("fired") }
/// timer.close()
/// ```
final class LoopTimer: LoopHandle {
    /// What the timer runs when it fires. Set it once (``init(loop:_:)`` or later) and
    /// start the timer without a closure: a closure per start would be an allocation per
    /// start.
    var onFire: (() -> Void)?

    /// Creates a stopped timer on `loop`; `onFire`, when given, is what ``start(after:repeat:_:)``
    /// runs unless it is given another closure.
    init(loop: UnsafeMutablePointer<uv_loop_t>, _ onFire: (() -> Void)? = nil) throws(RuntimeError) {
        self.onFire = onFire
        try super.init(uv_timer_t.self, "uv_timer_init") { uv_timer_init(loop, $0) }
    }

    private var timer: UnsafeMutablePointer<uv_timer_t> { typed(uv_timer_t.self) }

    /// (Re)starts the timer: `body` (or the closure given before) runs after
    /// `milliseconds`, then every `repeat` milliseconds when that is not 0. Throws when
    /// the timer is closing.
    func start(after milliseconds: UInt64, repeat: UInt64 = 0, _ body: (() -> Void)? = nil) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_timer_start") }
        if let body { onFire = body }
        let rc = uv_timer_start(
            timer, { t in LoopHandle.owner(LoopTimer.self, t).onFire?() }, milliseconds, `repeat`)
        try RuntimeError.check(rc, "uv_timer_start")
    }

    /// Stops the timer; it may be started again.
    func stop() {
        guard !isClosing else { return }
        // libuv 1.44's uv_timer_stop returns 0 whatever the state; anything else is a
        // libuv this code does not know.
        let rc = uv_timer_stop(timer)
        precondition(rc == 0, "uv_timer_stop returned \(rc)")
    }

    override func willClose() {
        stop()
        onFire = nil
    }
}
