import Locking

/// What `/readyz` reports: ready once the session was restored from the stores and the
/// stores are writable (SEEDS row 4: the listener opens only after the restore).
public final class Readiness: Sendable {
    private let state = Locked<(restored: Bool, problem: String?)>((false, nil))
    private let storesWritable: @Sendable () -> Bool

    /// Creates a readiness check; `storesWritable` is asked on every probe.
    public init(storesWritable: @escaping @Sendable () -> Bool) {
        self.storesWritable = storesWritable
    }

    /// Marks the session as restored, or not, with a reason.
    public func restored(_ ok: Bool, problem: String? = nil) {
        state.withLock { $0 = (ok, problem) }
    }

    /// Whether the gateway is ready, and why not.
    public func check() -> (Bool, String) {
        let s = state.withLock { $0 }
        if !s.restored { return (false, s.problem ?? "the session is not restored yet") }
        if !storesWritable() { return (false, "the state directory is not writable") }
        return (true, "")
    }
}
