import AuthCore
import Foundation

/// A device login waiting for a person, as the admin API shows it: in the `202` answer to
/// a device login, in the session document (`device_authorization`) and in the
/// `device_authorization` event. Holds the user code (what the person types, worthless
/// without their approval) and never the device code.
struct DeviceAuthorizationDocument: Codable, Sendable, Equatable {
    var userCode: String
    var verificationURI: String
    var verificationURIComplete: String?
    /// RFC 3339.
    var expiresAt: String?
    /// Seconds between polls now.
    var interval: Int64
    /// Seconds left, in the `202` answer only.
    var expiresIn: Int64?

    init(_ s: DeviceAuthorizationStatus, now: Date? = nil) {
        userCode = s.userCode
        verificationURI = s.verificationURI
        verificationURIComplete = s.verificationURIComplete
        expiresAt = AdminJSON.rfc3339(s.expiresAt)
        interval = max(1, s.interval.components.seconds)
        expiresIn = now.map { max(0, Int64(s.expiresAt.timeIntervalSince($0).rounded())) }
    }

    enum CodingKeys: String, CodingKey {
        case userCode = "user_code"
        case verificationURI = "verification_uri"
        case verificationURIComplete = "verification_uri_complete"
        case expiresAt = "expires_at"
        case interval
        case expiresIn = "expires_in"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(userCode, forKey: .userCode)
        try c.encode(verificationURI, forKey: .verificationURI)
        try c.encode(verificationURIComplete, forKey: .verificationURIComplete)
        try c.encode(expiresAt, forKey: .expiresAt)
        try c.encode(interval, forKey: .interval)
        try c.encodeIfPresent(expiresIn, forKey: .expiresIn)
    }

    /// The line a person reads: where to go and what to type.
    var instructions: String {
        var text = "To log in, visit \(verificationURI) and enter the code \(userCode)"
        if let complete = verificationURIComplete { text += "\n(or open \(complete))" }
        if let expiresAt { text += "\nThe code expires at \(expiresAt)." }
        return text
    }
}
