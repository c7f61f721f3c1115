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

    /// Why the gateway is not ready. `/readyz` needs no token, so it says only this code;
    /// the details (which session, which error) are in the log.
    public enum Reason: String, Sendable {
        /// A session could not be restored from the stores (or is not restored yet).
        case sessionNotRestored = "session_not_restored"
        /// The state directory cannot be written.
        case stateDirectoryNotWritable = "state_directory_not_writable"
        /// The user-info call has not answered yet.
        case userInfoPending = "user_info_pending"
    }

    /// Whether the gateway is ready, and why not.
    public func check() -> (ready: Bool, reason: Reason?) {
        let s = state.withLock { $0 }
        if !s.restored { return (false, .sessionNotRestored) }
        if !storesWritable() { return (false, .stateDirectoryNotWritable) }
        if pending() != nil { return (false, .userInfoPending) }
        return (true, nil)
    }
}
