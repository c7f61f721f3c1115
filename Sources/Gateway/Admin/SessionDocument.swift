import AuthCore
import Foundation

/// The session document of the admin API (`GET /auth/session`, and inside events and
/// `GET /auth/sessions`). Holds no token.
///
/// A missing value is `null`, except `registration`, which is there only when it is known
/// to apply to this session.
struct SessionDocument: Encodable, Sendable, Equatable {
    var account: String
    /// `logged_in`, `guest` or `logged_out`.
    var state: String
    var subject: String?
    /// RFC 3339.
    var expiresAt: String?
    var generation: UInt64?
    /// RFC 3339.
    var lastLogin: String?
    var guest: Bool
    var epoch: UInt64
    /// What the user-info call said, for a logged-in session.
    var registration: String?
    /// The store keeping the session and who is refreshing it (only in `GET /auth/session`
    /// and `GET /auth/sessions`, not in events).
    var store: StoreDocument?
    /// The JWK thumbprint of the session's DPoP key (RFC 9449): the key its tokens are bound
    /// to, or, logged out, the key its next login proves (an authorization request's
    /// `dpop_jkt`). Only for a session with DPoP.
    var dpopJKT: String?
    /// A device login waiting for a person, while one is.
    var deviceAuthorization: DeviceAuthorizationDocument?
    /// What the token exchange that started the session issued (RFC 8693 §2.2.1), while
    /// logged in with such a session.
    var issuedTokenType: String?

    /// The document of `status`; `registration` is shown only while logged in.
    init(
        _ status: SessionStatus, registration: UserInfoProbe.Registration? = nil, store: StoreDocument? = nil,
        dpopJKT: String? = nil
    ) {
        account = status.account.rawValue
        state = status.isLoggedIn ? "logged_in" : (status.isGuest ? "guest" : "logged_out")
        subject = status.subject
        expiresAt = AdminJSON.rfc3339(status.expiresAt)
        generation = status.generation?.rawValue
        lastLogin = AdminJSON.rfc3339(status.lastLogin)
        guest = status.isGuest
        epoch = status.epoch
        self.registration = status.isLoggedIn ? registration?.rawValue : nil
        self.store = store
        self.dpopJKT = status.dpopThumbprint ?? dpopJKT
        deviceAuthorization = status.deviceAuthorization.map { DeviceAuthorizationDocument($0) }
        issuedTokenType = status.isLoggedIn ? status.issuedTokenType : nil
    }

    /// The member names, shared with the reader (``AdminEventPayload``).
    enum CodingKeys: String, CodingKey {
        case account, state, subject
        case expiresAt = "expires_at"
        case generation
        case lastLogin = "last_login"
        case guest, epoch
        case registration, store
        case dpopJKT = "dpop_jkt"
        case deviceAuthorization = "device_authorization"
        case issuedTokenType = "issued_token_type"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(account, forKey: .account)
        try c.encode(state, forKey: .state)
        try c.encode(subject, forKey: .subject)
        try c.encode(expiresAt, forKey: .expiresAt)
        try c.encode(generation, forKey: .generation)
        try c.encode(lastLogin, forKey: .lastLogin)
        try c.encode(guest, forKey: .guest)
        try c.encode(epoch, forKey: .epoch)
        try c.encodeIfPresent(registration, forKey: .registration)
        try c.encodeIfPresent(store, forKey: .store)
        try c.encodeIfPresent(dpopJKT, forKey: .dpopJKT)
        try c.encodeIfPresent(deviceAuthorization, forKey: .deviceAuthorization)
        try c.encodeIfPresent(issuedTokenType, forKey: .issuedTokenType)
    }
}

/// `GET /auth/sessions`: every session's document, by name.
struct SessionListDocument: Encodable, Sendable, Equatable {
    var sessions: [SessionDocument]
}
