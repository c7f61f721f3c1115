/// How the client authenticates to the token endpoint (RFC 6749 §2.3).
public enum ClientAuthentication: String, Sendable, Codable {
    /// `Authorization: Basic` with form-encoded id and secret (`client_secret_basic`).
    case basic
    /// `client_id` and `client_secret` in the request body (`client_secret_post`).
    case post
    /// A public client: `client_id` in the body, no secret.
    case none
}
