import AuthCore
import Locking

/// What `/readyz` reports: ready once the session was restored from the stores, the stores
/// are writable and have room, no rotated pair is held only in memory and, when configured,
/// the user-info call has answered (SEEDS row 4: the listener opens only after the restore).
public final class Readiness: Sendable {
    /// What one probe looks at, read fresh each time.
    public struct Inputs: Sendable, Equatable {
        /// Every session was restored from the stores.
        public var restored: Bool
        /// The state directory can be written.
        public var writable: Bool
        /// Bytes an unprivileged writer may still use on the state directory's file system
        /// (nil: unknown).
        public var freeBytes: Int?
        /// Some session holds a rotated pair only in memory (its save failed).
        public var unsavedCredentials: Bool
        /// A user-info call has not answered yet.
        public var userInfoPending: Bool
        /// The stores are a database that replicas share (PostgreSQL), not the state
        /// directory: `writable` then says whether the database answers.
        public var sharedStore: Bool
        /// A session's client key or assertion file cannot be used now.
        public var clientCredentialsUnusable: Bool
        /// A session with `autoLogin` is not logged in.
        public var notLoggedIn: Bool
        /// A server refusing a DPoP proof has a clock far from this machine's.
        public var clockSkewed: Bool
        /// A session's tokens are bound to a newer client certificate than the one this
        /// replica shows (another replica's).
        public var clientCertificateOutdated: Bool

        /// Creates the inputs of one probe.
        public init(
            restored: Bool, writable: Bool, freeBytes: Int?, unsavedCredentials: Bool, userInfoPending: Bool,
            sharedStore: Bool = false, clientCredentialsUnusable: Bool = false, notLoggedIn: Bool = false,
            clockSkewed: Bool = false, clientCertificateOutdated: Bool = false
        ) {
            self.clientCertificateOutdated = clientCertificateOutdated
            self.clockSkewed = clockSkewed
            self.notLoggedIn = notLoggedIn
            self.sharedStore = sharedStore
            self.clientCredentialsUnusable = clientCredentialsUnusable
            self.restored = restored
            self.writable = writable
            self.freeBytes = freeBytes
            self.unsavedCredentials = unsavedCredentials
            self.userInfoPending = userInfoPending
        }
    }

    /// Below this many free bytes the state directory counts as full: a save of the sealed
    /// tokens (a few KiB, written to a temporary file first) may fail.
    public static let minimumFreeBytes = 1 << 20

    private let state = Locked<(restored: Bool, problem: String?)>((false, nil))
    private let storesWritable: @Sendable () -> Bool
    private let freeBytes: @Sendable () -> Int?
    private let unsavedCredentials: @Sendable () -> Bool
    private let pending: @Sendable () -> String?
    private let sharedStore: Bool
    private let clientCredentialsUsable: @Sendable () -> Bool
    private let loggedIn: @Sendable () -> Bool
    private let clockSkewed: @Sendable () -> Bool
    private let clientCertificateOutdated: @Sendable () -> Bool

    /// Creates a readiness check. Every closure is asked on every probe: `storesWritable`,
    /// `freeBytes` (room left on the state directory's file system), `unsavedCredentials`
    /// (a session holds a rotated pair only in memory) and `pending` (a reason to wait, such
    /// as a user-info call not answered yet). With `sharedStore` the stores are a shared
    /// database and `storesWritable` says whether it answers. `clientCredentialsUsable` says
    /// whether every session's client key or assertion file can be used now; `loggedIn`
    /// whether every session with `autoLogin` is logged in; `clockSkewed` whether a server
    /// refusing a DPoP proof has a clock far from this machine's (``AuthCore/ClockSkewWatch``);
    /// `clientCertificateOutdated` whether a session's tokens are bound to a newer client
    /// certificate than this replica's (``AuthCore/AuthActor/clientCertificateOutdated``).
    public init(
        storesWritable: @escaping @Sendable () -> Bool, freeBytes: @escaping @Sendable () -> Int? = { nil },
        unsavedCredentials: @escaping @Sendable () -> Bool = { false },
        pending: @escaping @Sendable () -> String? = { nil }, sharedStore: Bool = false,
        clientCredentialsUsable: @escaping @Sendable () -> Bool = { true },
        loggedIn: @escaping @Sendable () -> Bool = { true }, clockSkewed: @escaping @Sendable () -> Bool = { false },
        clientCertificateOutdated: @escaping @Sendable () -> Bool = { false }
    ) {
        self.clientCertificateOutdated = clientCertificateOutdated
        self.clockSkewed = clockSkewed
        self.loggedIn = loggedIn
        self.sharedStore = sharedStore
        self.clientCredentialsUsable = clientCredentialsUsable
        self.storesWritable = storesWritable
        self.freeBytes = freeBytes
        self.unsavedCredentials = unsavedCredentials
        self.pending = pending
    }

    /// Marks the session as restored, or not, with a reason.
    public func restored(_ ok: Bool, problem: String? = nil) {
        state.withLock { $0 = (ok, problem) }
    }

    /// Why the gateway is not ready. `/readyz` needs no token, so it says only this code;
    /// the details (which session, which error) are in the log.
    public enum Reason: String, Sendable, CaseIterable {
        /// A session could not be restored from the stores (or is not restored yet).
        case sessionNotRestored = "session_not_restored"
        /// The state directory cannot be written.
        case stateDirectoryNotWritable = "state_directory_not_writable"
        /// The shared store (PostgreSQL) does not answer: cached tokens are still served, a
        /// refresh answers 503 until it returns.
        case storeUnavailable = "store_unavailable"
        /// The state directory's file system has less than ``Readiness/minimumFreeBytes`` left.
        case stateDirectoryFull = "state_directory_full"
        /// A rotated pair is held only in memory: its save failed (and is retried). The
        /// session works, but a restart now would present a spent refresh token.
        case credentialsNotSaved = "credentials_not_saved"
        /// A session's client key or assertion file cannot be used (missing, unreadable, of
        /// the wrong kind, expired): the session serves its token while it lasts, but cannot
        /// refresh it.
        case clientCredentialsUnusable = "client_credentials_unusable"
        /// A session's tokens are bound to a newer client certificate (RFC 8705 §3) than the
        /// one this replica shows, another replica's: this one does not refresh them (it
        /// would bind them back to its older certificate) and answers the session's requests
        /// the API refuses with `client-certificate-outdated`, until its certificate is
        /// renewed too.
        case clientCertificateOutdated = "client_certificate_outdated"
        /// A server refused a DPoP proof, and the `Date` of its answer is more than
        /// ``AuthCore/ClockSkewWatch/threshold`` from this machine's clock: every proof will be
        /// refused until the clocks agree (set by the next proof a server accepts).
        case clockSkewed = "clock_skewed"
        /// A session with `autoLogin` is not logged in: logging in, backing off after a
        /// failed login, or left logged out by a logout someone asked for.
        case notLoggedIn = "not_logged_in"
        /// The user-info call has not answered yet.
        case userInfoPending = "user_info_pending"
    }

    /// The decision, from what one probe saw: the first reason in the order of ``Reason``.
    public static func decide(_ inputs: Inputs) -> Reason? {
        if !inputs.restored { return .sessionNotRestored }
        if !inputs.writable { return inputs.sharedStore ? .storeUnavailable : .stateDirectoryNotWritable }
        if let free = inputs.freeBytes, free < minimumFreeBytes { return .stateDirectoryFull }
        if inputs.unsavedCredentials { return .credentialsNotSaved }
        if inputs.clientCredentialsUnusable { return .clientCredentialsUnusable }
        if inputs.clientCertificateOutdated { return .clientCertificateOutdated }
        if inputs.clockSkewed { return .clockSkewed }
        if inputs.notLoggedIn { return .notLoggedIn }
        if inputs.userInfoPending { return .userInfoPending }
        return nil
    }

    /// What a probe sees now.
    public func inputs() -> Inputs {
        Inputs(
            restored: state.withLock { $0.restored }, writable: storesWritable(), freeBytes: freeBytes(),
            unsavedCredentials: unsavedCredentials(), userInfoPending: pending() != nil, sharedStore: sharedStore,
            clientCredentialsUnusable: !clientCredentialsUsable(), notLoggedIn: !loggedIn(), clockSkewed: clockSkewed(),
            clientCertificateOutdated: clientCertificateOutdated())
    }

    /// Whether the gateway is ready, and why not.
    public func check() -> (ready: Bool, reason: Reason?) {
        let reason = Self.decide(inputs())
        return (reason == nil, reason)
    }
}
