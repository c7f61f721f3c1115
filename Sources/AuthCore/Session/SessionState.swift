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

    /// Creates a state.
    public init(
        isLoggedIn: Bool, subject: String? = nil, lastLogin: Date? = nil, isGuest: Bool = false,
        updatedAt: Date? = nil
    ) {
        self.isLoggedIn = isLoggedIn
        self.subject = subject
        self.lastLogin = lastLogin
        self.isGuest = isGuest
        self.updatedAt = updatedAt
    }

    /// Logged out, no subject.
    public static let loggedOut = SessionState(isLoggedIn: false)
}
