/// An RFC 6749 §5.2 error response: `{"error": "invalid_grant", "error_description": …}`.
public struct OAuthErrorResponse: Sendable, Equatable, CustomStringConvertible {
    /// The error code, e.g. `invalid_grant`.
    public var error: String
    /// The human description, when sent.
    public var errorDescription: String?
    /// The `error_uri`, when sent.
    public var errorURI: String?

    /// Creates an error response.
    public init(error: String, errorDescription: String? = nil, errorURI: String? = nil) {
        self.error = error
        self.errorDescription = errorDescription
        self.errorURI = errorURI
    }

    /// The codes RFC 6749 §5.2 defines.
    public static let standardCodes: Set<String> = [
        "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
        "unsupported_grant_type", "invalid_scope",
    ]

    /// Whether this error means the grant (or client) will never work again, so a refresh
    /// failing with it must end the session. `temporarily_unavailable` and unknown codes
    /// sent with a 5xx are not terminal.
    public var isTerminal: Bool {
        // `invalid_target` (RFC 8693 §2.2.2, RFC 8707): the audience or resource asked for
        // is not served; asking again the same way cannot succeed.
        OAuthErrorResponse.standardCodes.contains(error) || error == "invalid_target"
    }

    public var description: String {
        "\(error)\(errorDescription.map { ": \($0)" } ?? "")"
    }
}
