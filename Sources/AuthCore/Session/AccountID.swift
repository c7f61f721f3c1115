/// Identifies one session: the account (or deployment identity) whose tokens AuthGate holds.
///
/// Stores key their records by it, and one ``AuthActor`` owns the session of one account.
public struct AccountID: Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The raw identifier, e.g. `"default"` or `"billing-service"`.
    public let rawValue: String

    /// Creates an account identifier.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates an account identifier from a literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The account identifier used when a deployment has a single identity.
    public static let `default` = AccountID("default")

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The raw identifier (account names are not secret).
    public var description: String { rawValue }
}
