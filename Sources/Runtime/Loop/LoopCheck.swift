import CLibUV
import Glibc

/// A libuv check handle (`uv_check_t`): while started, its closure runs once per loop turn,
/// right after the loop polled for I/O and ran the I/O callbacks. Heap allocated, freed in
/// its close callback (``LoopHandle``).
final class LoopCheck: LoopHandle {
    private var onCheck: (() -> Void)?

    /// Creates a stopped check handle on `loop`; `onCheck` runs on each turn while started.
    init(loop: UnsafeMutablePointer<uv_loop_t>, _ onCheck: @escaping () -> Void) throws(RuntimeError) {
        self.onCheck = onCheck
        try super.init(uv_check_t.self, "uv_check_init") { uv_check_init(loop, $0) }
    }

    /// Starts running the closure on each turn. Throws when the handle is closing.
    func start() throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_check_start") }
        let rc = uv_check_start(typed(uv_check_t.self)) { h in LoopHandle.owner(LoopCheck.self, h).onCheck?() }
        try RuntimeError.check(rc, "uv_check_start")
    }

    override func willClose() {
        // uv_close stops the handle.
        onCheck = nil
    }
}
