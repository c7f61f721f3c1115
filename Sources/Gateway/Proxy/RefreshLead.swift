public import Foundation

/// How long before a token expires AuthGate refreshes it, as configured by `refreshLead`:
/// a number of seconds (`30`), or a share of the token's lifetime (`"50%"`: at half-life).
///
/// A longer lead means fewer requests meet an expired token. With an authorization server
/// that revokes the previous access token when it rotates, though, every refresh — early or
/// not — rejects the requests still in flight with the old token; AuthGate replays those
/// (``AuthCore/ReplayRule``), so the cost of an early refresh is one more round trip for
/// them, not an error.
public enum RefreshLead: Sendable, Equatable, Codable, CustomStringConvertible {
    /// This many seconds before expiry (capped at half the lifetime).
    case seconds(Int)
    /// When this share of the lifetime is left, in percent (1–99).
    case percent(Int)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let seconds = try? container.decode(Int.self) {
            self = .seconds(seconds)
            return
        }
        guard let text = try? container.decode(String.self), text.hasSuffix("%"), let n = Int(text.dropLast()) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a whole number of seconds, or a percentage such as \"50%\"")
        }
        self = .percent(n)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .seconds(let s): try container.encode(s)
        case .percent(let p): try container.encode("\(p)%")
        }
    }

    public var description: String {
        switch self {
        case .seconds(let s): "\(s) s"
        case .percent(let p): "\(p)%"
        }
    }

    /// The value's range problem, if any.
    var problem: String? {
        switch self {
        case .seconds(let s) where !(0...86_400).contains(s): "must be 0…86400 seconds"
        case .percent(let p) where !(1...99).contains(p): "must be a percentage from 1% to 99%"
        default: nil
        }
    }
}
