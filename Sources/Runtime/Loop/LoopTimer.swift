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

    /// In deadline mode (``arm(at:)``): the loop time ``onFire`` is due at; nil when nothing is.
    private var due: UInt64?
    /// In deadline mode: the loop time the libuv timer was last started to fire at.
    private var firesAt: UInt64?

    /// (Re)starts the timer: `body` (or the closure given before) runs after
    /// `milliseconds`, then every `repeat` milliseconds when that is not 0. Throws when
    /// the timer is closing.
    func start(after milliseconds: UInt64, repeat: UInt64 = 0, _ body: (() -> Void)? = nil) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_timer_start") }
        if let body { onFire = body }
        due = nil
        firesAt = nil
        try startLibuvTimer(after: milliseconds, repeat: `repeat`)
    }

    /// Makes ``onFire`` due at loop time `deadline` (milliseconds, `uv_now`), once. The
    /// libuv timer is moved only when it would fire later than that: a deadline pushed
    /// back (a connection's keep-alive or idle deadline, after each request) costs no libuv
    /// call, and a firing before the deadline starts the timer again for the rest. Throws
    /// when the timer is closing.
    func arm(at deadline: UInt64) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_timer_start") }
        due = deadline
        if let firesAt, firesAt <= deadline { return }
        let now = uv_now(timer.pointee.loop)
        try startLibuvTimer(after: deadline > now ? deadline - now : 0, repeat: 0)
        firesAt = max(deadline, now)
    }

    /// Nothing is due any more (deadline mode). The libuv timer is left as it is: when it
    /// fires, it finds nothing due, unless ``arm(at:)`` was called again.
    func disarm() {
        due = nil
    }

    /// How many times the libuv timer was started (what deadline mode saves; tests read it).
    private(set) var libuvStarts = 0

    private func startLibuvTimer(after milliseconds: UInt64, repeat: UInt64) throws(RuntimeError) {
        libuvStarts += 1
        let rc = uv_timer_start(timer, { t in LoopHandle.owner(LoopTimer.self, t).fired() }, milliseconds, `repeat`)
        try RuntimeError.check(rc, "uv_timer_start")
    }

    private func fired() {
        // Started with ``start(after:repeat:_:)``: run as asked.
        guard firesAt != nil else {
            onFire?()
            return
        }
        firesAt = nil
        guard let due else { return }
        if uv_now(timer.pointee.loop) < due {
            // The deadline moved on since the timer was started.
            do throws(RuntimeError) {
                try arm(at: due)
            } catch {
                // Only a closing timer refuses; a closing timer has nothing left to run.
            }
            return
        }
        self.due = nil
        onFire?()
    }

    /// Stops the timer; it may be started again.
    func stop() {
        due = nil
        firesAt = nil
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
