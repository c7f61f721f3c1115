import Locking

/// What `/readyz` reports: ready once the session was restored from the stores, the stores
/// are writable and, when configured, the user-info call has answered (SEEDS row 4: the
/// listener opens only after the restore).
public final class Readiness: Sendable {
    private let state = Locked<(restored: Bool, problem: String?)>((false, nil))
    private let storesWritable: @Sendable () -> Bool
    private let pending: @Sendable () -> String?

    /// Creates a readiness check; `storesWritable` and `pending` (a reason to wait, such as
    /// a user-info call not answered yet) are asked on every probe.
    public init(storesWritable: @escaping @Sendable () -> Bool, pending: @escaping @Sendable () -> String? = { nil }) {
        self.storesWritable = storesWritable
        self.pending = pending
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
        if let reason = pending() { return (false, reason) }
        return (true, "")
    }
}
