/// How the client authenticates to the token endpoint (RFC 6749 §2.3).
public enum ClientAuthentication: String, Sendable, Codable {
    /// `Authorization: Basic` with form-encoded id and secret (`client_secret_basic`).
    case basic
    /// `client_id` and `client_secret` in the request body (`client_secret_post`).
    case post
    /// A public client: `client_id` in the body, no secret.
    case none
    /// A JWT signed with the client's private key, or made by someone else and read from a
    /// file (``ClientAssertion``; RFC 7523 §2.2, OpenID Connect Core §9).
    case privateKeyJWT = "private_key_jwt"
    /// A JWT signed with HS256 and the client secret (OpenID Connect Core §9).
    case clientSecretJWT = "client_secret_jwt"
    /// The client's certificate, issued by a CA the server trusts, shown in the TLS
    /// handshake; `client_id` in the body (RFC 8705 §2.1).
    case tlsClientAuth = "tls_client_auth"
    /// A self-signed certificate the server holds for the client, shown in the TLS
    /// handshake; `client_id` in the body (RFC 8705 §2.2).
    case selfSignedTLSClientAuth = "self_signed_tls_client_auth"

    /// Whether the client proves itself with a ``ClientAssertion``.
    public var usesAssertion: Bool { self == .privateKeyJWT || self == .clientSecretJWT }

    /// Whether the client proves itself with its TLS certificate (``ClientCertificate``).
    public var usesCertificate: Bool { self == .tlsClientAuth || self == .selfSignedTLSClientAuth }
}
