public import Foundation

/// A device login (RFC 8628) as the processes sharing a session's stores see it: its id,
/// the device code every one of them may poll with (a secret: stored sealed, never
/// printed), what a person needs, and how it ended.
public struct SharedDeviceLogin: Sendable, Equatable, CustomStringConvertible {
    /// The outcome of a login that logged the session in.
    public static let approved = "approved"

    /// Names this login among those shared for the session (random).
    public var id: String
    /// `device_code`: presented at the token endpoint until the login completes.
    public var deviceCode: String
    /// The user code, where to enter it, when it expires and the polling interval now.
    public var status: DeviceAuthorizationStatus
    /// The subject the login was started for, if one was named.
    public var subject: String?
    /// How it ended (``approved`` or a ``DeviceLoginEnd/code``); nil while it waits.
    public var outcome: String?

    /// Creates a shared device login.
    public init(id: String, deviceCode: String, status: DeviceAuthorizationStatus, subject: String? = nil, outcome: String? = nil)
    {
        self.id = id
        self.deviceCode = deviceCode
        self.status = status
        self.subject = subject
        self.outcome = outcome
    }

    /// Whether a person may still approve it at `now`: it has not ended and its codes have
    /// not expired. Only such a login is adopted by a process starting a device login.
    public func isWaiting(at now: Date) -> Bool {
        outcome == nil && now < status.expiresAt
    }

    /// The id, user code and outcome; the device code is redacted.
    public var description: String {
        "SharedDeviceLogin(id: \(id), deviceCode: <redacted>, userCode: \(status.userCode), outcome: \(outcome ?? "waiting"))"
    }
}
