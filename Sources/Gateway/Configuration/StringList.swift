/// A configuration field that takes one string or a list of them: `"orders"` and
/// `["orders", "reports"]` both read. Written back as read: one value as a string, more as
/// an array.
///
/// It reads a list first, so the configuration's schema (``ConfigurationSchema``) sees a list
/// of strings: an environment variable or a flag takes `orders` or `orders,reports`.
///
/// ```swift
/// let one = try JSONDecoder().decode(StringList.self, from: Data(#""orders""#.utf8))   // ["orders"]
/// let two: StringList = ["orders", "reports"]
/// ```
public struct StringList: Sendable, Codable, Equatable, ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    /// The values, in the order given.
    public var values: [String]

    /// A list of `values`.
    public init(_ values: [String]) {
        self.values = values
    }

    /// One value.
    public init(stringLiteral value: String) {
        values = [value]
    }

    /// Several values.
    public init(arrayLiteral elements: String...) {
        values = elements
    }

    /// Reads a JSON array of strings, or one string.
    public init(from decoder: any Decoder) throws {
        if var list = try? decoder.unkeyedContainer() {
            var values: [String] = []
            while !list.isAtEnd { values.append(try list.decode(String.self)) }
            self.values = values
            return
        }
        guard let value = try? decoder.singleValueContainer().decode(String.self) else {
            throw DecodingError.typeMismatch(
                StringList.self,
                .init(codingPath: decoder.codingPath, debugDescription: "must be a string or an array of strings"))
        }
        values = [value]
    }

    /// Writes one value as a string, and any other number of them as an array.
    public func encode(to encoder: any Encoder) throws {
        if values.count == 1 {
            var single = encoder.singleValueContainer()
            try single.encode(values[0])
        } else {
            var list = encoder.unkeyedContainer()
            for value in values { try list.encode(value) }
        }
    }
}
