public import Foundation

/// A device authorization endpoint's answer (RFC 8628 §3.2): what a person needs to approve
/// the login elsewhere, and the `device_code` the client polls the token endpoint with.
///
/// The `device_code` is a secret (whoever holds it receives the tokens once approved): it
/// is never printed, and ``status(expiresAt:)`` leaves it out. The user code is not: it is
/// what the person types, short-lived, and worthless without their approval.
public struct DeviceAuthorization: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `device_code`: presented at the token endpoint until the login completes.
    public var deviceCode: String
    /// `user_code`: what the person enters at the verification URI.
    public var userCode: String
    /// `verification_uri`: where the person goes.
    public var verificationURI: String
    /// `verification_uri_complete`: the verification URI with the user code in it, when the
    /// server sends one (for a QR code or a link).
    public var verificationURIComplete: String?
    /// `expires_in`: how long the codes live.
    public var expiresIn: Duration
    /// `interval`: the time to wait between polls (5 s when the server sends none, §3.2).
    public var interval: Duration

    /// The interval when the server names none (RFC 8628 §3.2).
    public static let defaultInterval = Duration.seconds(5)

    /// Creates an answer.
    public init(
        deviceCode: String, userCode: String, verificationURI: String, verificationURIComplete: String? = nil,
        expiresIn: Duration, interval: Duration = DeviceAuthorization.defaultInterval
    ) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresIn = expiresIn
        self.interval = interval
    }

    /// What may be shown of it: everything but the device code, with its expiry as a date.
    public func status(expiresAt: Date) -> DeviceAuthorizationStatus {
        DeviceAuthorizationStatus(
            userCode: userCode, verificationURI: verificationURI, verificationURIComplete: verificationURIComplete,
            expiresAt: expiresAt, interval: interval)
    }

    /// The user code and URI; the device code is redacted.
    public var description: String {
        "DeviceAuthorization(deviceCode: <redacted>, userCode: \(userCode), verificationURI: \(verificationURI), "
            + "expiresIn: \(expiresIn), interval: \(interval))"
    }

    /// Same as ``description``: the device code is never printed.
    public var debugDescription: String { description }
}

/// A device login waiting for a person (RFC 8628 §3.3): what a session shows of it. Holds
/// no secret.
public struct DeviceAuthorizationStatus: Sendable, Equatable {
    /// The code the person enters.
    public var userCode: String
    /// Where the person enters it.
    public var verificationURI: String
    /// The verification URI with the user code in it, when the server sent one.
    public var verificationURIComplete: String?
    /// When the codes expire (wall clock).
    public var expiresAt: Date
    /// The polling interval now (it grows by 5 s at each `slow_down`).
    public var interval: Duration

    /// Creates a status.
    public init(
        userCode: String, verificationURI: String, verificationURIComplete: String? = nil, expiresAt: Date, interval: Duration
    ) {
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresAt = expiresAt
        self.interval = interval
    }
}
