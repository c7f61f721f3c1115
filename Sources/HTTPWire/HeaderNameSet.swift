/// A fixed set of header names, looked up without case and without allocating: the names
/// are kept by length, so a lookup compares the name with the few of the same length only.
///
/// ```swift
/// let hopByHop = HeaderNameSet(["connection", "keep-alive", "te"])
/// hopByHop.contains("Keep-Alive")  // true
/// ```
public struct HeaderNameSet: Sendable {
    /// The lower-cased names, indexed by their length in bytes.
    private let byLength: [[[UInt8]]]

    /// A set of `names` (any case).
    public init<Names: Sequence>(_ names: Names) where Names.Element == String {
        let lowered = names.map { Array($0.asciiLowercased.utf8) }
        var byLength = [[[UInt8]]](repeating: [], count: (lowered.map(\.count).max() ?? 0) + 1)
        for name in lowered where !byLength[name.count].contains(name) { byLength[name.count].append(name) }
        self.byLength = byLength
    }

    /// This set and `names`.
    public func adding<Names: Sequence>(_ names: Names) -> HeaderNameSet where Names.Element == String {
        HeaderNameSet(byLength.joined().map { String(decoding: $0, as: UTF8.self) } + Array(names))
    }

    /// Whether `name` is in the set, compared without ASCII case.
    public func contains(_ name: String) -> Bool {
        let count = name.utf8.count
        guard count < byLength.count, !byLength[count].isEmpty else { return false }
        var name = name
        return name.withUTF8 { contains($0) }
    }

    /// Whether the name spelled by `bytes` is in the set, compared without ASCII case.
    public func contains(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard count < byLength.count else { return false }
        return byLength[count].contains { candidate in
            for i in 0..<count {
                let b = bytes[i]
                if (b >= 65 && b <= 90 ? b | 0x20 : b) != candidate[i] { return false }
            }
            return true
        }
    }
}
