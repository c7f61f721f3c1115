/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and duplicates are kept as received, because framing rules need to see
/// every `Content-Length` and `Transfer-Encoding` line.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// The fields in wire order.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates a header list.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Makes room for `n` fields.
    public mutating func reserveCapacity(_ n: Int) {
        fields.reserveCapacity(n)
    }

    /// Appends a field.
    public mutating func add(name: String, value: String) {
        fields.append((name, value))
    }

    /// Replaces every field called `name` with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        fields.append((name, value))
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        // Most calls find nothing to remove: then the fields are not even copied.
        guard fields.contains(where: { $0.name.caseInsensitiveEquals(name) }) else { return }
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// The first value of `name`, if any.
    public subscript(first name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of `name`, in order.
    public subscript(all name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        var n = 0
        for field in fields where field.name.caseInsensitiveEquals(name) { n += 1 }
        return n
    }

    /// Whether a field called `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Number of fields.
    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive comparison, as header names need.
    @inlinable
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        // Lengths first: O(1) for native strings, and most names differ in length.
        let count = utf8.count
        if count != other.utf8.count { return false }
        var a = self
        var b = other
        // Contiguous UTF-8 (no copy for native strings): a byte loop, no iterators.
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for i in 0..<count where x[i] != y[i] {
                    let lower = x[i] | 0x20
                    guard lower == y[i] | 0x20, lower >= 0x61, lower <= 0x7A else { return false }
                }
                return true
            }
        }
    }

    /// The string lowercased in ASCII only.
    public var asciiLowercased: String {
        String(decoding: utf8.map { ($0 >= 65 && $0 <= 90) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
