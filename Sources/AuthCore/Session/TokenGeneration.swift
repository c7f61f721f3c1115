/// A counter that grows each time an ``AuthActor`` installs a new access token.
///
/// A caller that got a 401 for the token of generation `g` asks
/// ``AuthActor/refresh(after:)`` with `g`; when the current generation is already newer, the
/// 401 was for a stale token and no refresh happens.
public struct TokenGeneration: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The raw counter value.
    public let rawValue: UInt64

    /// Creates a generation.
    public init(_ rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// The generation before any token was installed.
    public static let zero = TokenGeneration(0)

    /// The following generation.
    public var next: TokenGeneration { TokenGeneration(rawValue &+ 1) }

    public static func < (lhs: TokenGeneration, rhs: TokenGeneration) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { "g\(rawValue)" }
}
