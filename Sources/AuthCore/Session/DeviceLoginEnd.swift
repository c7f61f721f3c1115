/// Why a device login (RFC 8628) ended without logging the session in.
public enum DeviceLoginEnd: Sendable, Equatable, CustomStringConvertible {
    /// The codes expired before anyone approved (`expired_token`, or the deadline passed).
    case expired
    /// The person declined (`access_denied`).
    case denied
    /// The token endpoint refused the polling for good (`invalid_grant`, `invalid_client`,
    /// an unusable answer, …): the code is the OAuth error or AuthGate's own.
    case rejected(code: String)
    /// A logout someone asked for cancelled it.
    case cancelled
    /// Another login succeeded meanwhile.
    case replaced
    /// The approved tokens could not be stored.
    case storeFailed

    /// A stable code: `expired_token`, `access_denied`, the refusal's code, `cancelled`,
    /// `replaced_by_login` or `token_store_failed`.
    public var code: String {
        switch self {
        case .expired: "expired_token"
        case .denied: "access_denied"
        case .rejected(let code): code
        case .cancelled: "cancelled"
        case .replaced: "replaced_by_login"
        case .storeFailed: "token_store_failed"
        }
    }

    /// A sentence for people.
    public var description: String {
        switch self {
        case .expired: "the user code expired before anyone approved the login"
        case .denied: "the login was declined at the verification URI"
        case .rejected(let code): "the authorization server refused the device login (\(code))"
        case .cancelled: "a logout cancelled the device login"
        case .replaced: "another login replaced the device login"
        case .storeFailed: "the approved tokens could not be stored"
        }
    }
}

extension DeviceLoginEnd {
    /// The end whose ``code`` is `code` (a server's refusal for any code not AuthGate's own).
    public init(code: String) {
        switch code {
        case "expired_token": self = .expired
        case "access_denied": self = .denied
        case "cancelled": self = .cancelled
        case "replaced_by_login": self = .replaced
        case "token_store_failed": self = .storeFailed
        default: self = .rejected(code: code)
        }
    }
}
