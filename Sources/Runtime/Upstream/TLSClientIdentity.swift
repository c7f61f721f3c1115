/// The certificate and key an upstream or a token endpoint is shown in a TLS handshake
/// (mutual TLS, RFC 8705).
///
/// Both are PEM files, read again when they change (``TLSIdentityContents``): a renewed
/// certificate is shown from the next request on, over new connections. A connection made
/// with one certificate is never reused for a request that shows another.
public struct TLSClientIdentity: Sendable, Hashable {
    /// The PEM certificate, optionally followed by its intermediate certificates.
    public var certificateFile: String
    /// The PEM private key of the certificate.
    public var keyFile: String

    /// Creates an identity from a certificate file and its key file.
    public init(certificateFile: String, keyFile: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}

extension TLSClientIdentity {
    /// The PEM bytes of the certificate file as requests showing this identity send them now
    /// (the same cache they read, so at most a second old); nil when a file cannot be read.
    /// For what the certificate is, never for the key: the key's bytes stay inside.
    public func shownCertificatePEM() -> [UInt8]? {
        TLSIdentityContents.shared.contents(of: self)?.certificate
    }
}
