/// The certificate and key an upstream or a token endpoint is shown in a TLS handshake
/// (mutual TLS, RFC 8705).
///
/// Both are PEM files, read by libcurl at each new connection: a file replaced on disk is
/// presented from the next connection on. A connection made with one identity is never
/// reused for a request that names another (libcurl matches connections by certificate).
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
