public import Foundation

/// The non-secret facts of a session, kept in a plain file: the UserDefaults' job on iOS.
///
/// Only ``AuthActor`` writes it (through its `login`/`logout`/`restore`), so it cannot drift
/// from the token store.
public struct SessionState: Sendable, Equatable, Codable {
    /// Whether a session is logged in.
    public var isLoggedIn: Bool
    /// The subject (user name or `sub` claim), when known.
    public var subject: String?
    /// When the last login happened.
    public var lastLogin: Date?
    /// Whether the session is an explicit guest session (no tokens, public routes only).
    public var isGuest: Bool
    /// When this state was written.
    public var updatedAt: Date?
    /// A random name of the login that began the session (nil in states an earlier version
    /// wrote): a process sharing the stores tells another's login from a refresh by it,
    /// however soon after the previous login it came (``lastLogin`` is kept to the second).
    public var loginID: String?

    /// Creates a state.
    public init(
        isLoggedIn: Bool, subject: String? = nil, lastLogin: Date? = nil, isGuest: Bool = false,
        updatedAt: Date? = nil, loginID: String? = nil
    ) {
        self.isLoggedIn = isLoggedIn
        self.subject = subject
        self.lastLogin = lastLogin
        self.isGuest = isGuest
        self.updatedAt = updatedAt
        self.loginID = loginID
    }

    /// Whether this state, read from the stores, is of a login other than the one `current`
    /// (this process's state) began: another process logged in since. A state without a
    /// login id (written by an earlier version) is not told apart.
    public func isAnotherLogin(than current: SessionState) -> Bool {
        guard isLoggedIn, let loginID else { return false }
        return loginID != current.loginID
    }

    /// A new login id.
    public static func newLoginID() -> String {
        String(UInt64.random(in: 1...UInt64.max), radix: 16)
    }

    /// Logged out, no subject.
    public static let loggedOut = SessionState(isLoggedIn: false)
}
