/// The certificate the client shows the token endpoint in the TLS handshake: its
/// credential under `tls_client_auth` and `self_signed_tls_client_auth` (RFC 8705 §2), and
/// what the server binds its access tokens to (§3) whatever the authentication method.
///
/// Only the paths: the transport reads both files for each new connection, so a
/// certificate renewed on disk is shown from the next connection on.
public struct ClientCertificate: Sendable, Hashable {
    /// The PEM certificate, optionally followed by its intermediate certificates.
    public var certificateFile: String
    /// The PEM private key of the certificate.
    public var keyFile: String

    /// Creates a certificate from its files.
    public init(certificateFile: String, keyFile: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}
