internal import Crypto
public import Foundation

/// What the token store keeps, sealed with the tokens, of the client certificate they are
/// bound to (RFC 8705 §3): the certificate shown to the token endpoint when they were
/// obtained. Replicas that share a session compare it with their own certificate before a
/// refresh (``CertificateBindingRule``), so the binding only moves to a newer certificate.
public struct CertificateBinding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The certificate's `x5t#S256`: the base64url SHA-256 of its DER encoding.
    public var thumbprint: String
    /// The start of the certificate's validity (`notBefore`): a renewed certificate starts
    /// later than the one it replaces.
    public var notBefore: Date

    /// Creates a binding.
    public init(thumbprint: String, notBefore: Date) {
        self.thumbprint = thumbprint
        self.notBefore = notBefore
    }

    /// The binding of the certificate whose DER encoding is `der`, valid from `notBefore`.
    public init(der: [UInt8], notBefore: Date) {
        self.init(thumbprint: Base64URL.encode(SHA256.hash(data: der)), notBefore: notBefore)
    }

    /// The thumbprint and the start of validity: both are public facts of the certificate.
    public var description: String {
        "CertificateBinding(x5t#S256: \(thumbprint), notBefore: \(RFC3339.format(notBefore)))"
    }
}
