/// A strict RFC 8259 reader for what people send AuthGate: admin API bodies and the
/// configuration file.
///
/// Stricter than `JSONSerialization` where leniency hides mistakes: the text must be UTF-8
/// (no other encoding is guessed), a name may appear only once per object (I-JSON, RFC
/// 7493: with two `password` members, which one counts?), nesting is bounded, and nothing
/// may follow the value. Errors say where (byte offset, line and column) and what, never
/// quoting the text, which may hold a secret.
///
/// ```swift
/// let value = try StrictJSON.parse(Array(#"{"a":[1,true]}"#.utf8))
/// value["a"]   // .array([.number("1"), .bool(true)])
/// ```
struct StrictJSON {
    /// Why a text is not acceptable JSON, and where.
    struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong, for example `expected ',' or '}'`.
        let reason: String
        /// The byte offset of the problem (0-based).
        let offset: Int
        /// The line (1-based) and column (1-based, in bytes) of `offset`.
        let line: Int
        let column: Int

        var description: String { "\(reason) at line \(line), column \(column)" }
    }

    /// The deepest nesting of arrays and objects accepted by default.
    static let defaultMaxDepth = 64

    private let bytes: [UInt8]
    private let maxDepth: Int
    private var index = 0

    private init(_ bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses `bytes` as one JSON value. A leading UTF-8 byte order mark is skipped (RFC 8259
    /// §8.1 allows a parser to ignore it).
    static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSONValue {
        var parser = StrictJSON(bytes, maxDepth: maxDepth)
        if let bad = firstInvalidUTF8(bytes) { throw parser.failure("invalid UTF-8", at: bad) }
        if let nul = bytes.firstIndex(of: 0) {
            // Never valid in JSON text; many of them mean UTF-16 or UTF-32.
            throw parser.failure("a NUL byte (the text must be UTF-8, and a NUL in a string escaped as \\u0000)", at: nul)
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipSpace()
        if parser.index == bytes.count { throw parser.failure("no JSON value (the text is empty)") }
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        if parser.index != bytes.count { throw parser.failure("unexpected text after the JSON value") }
        return value
    }

    // MARK: Grammar

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw failure("the text ends where a value should start") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("expected a JSON value")
        }
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maxDepth else { throw failure("nested deeper than \(maxDepth) levels") }
        index += 1
        var members: [(name: String, value: JSONValue)] = []
        var names: Set<String> = []
        skipSpace()
        if peek(UInt8(ascii: "}")) {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard peek(UInt8(ascii: "\"")) else { throw failure("expected a member name in double quotes") }
            let at = index
            let name = try string()
            guard names.insert(name).inserted else {
                throw failure("the member \(Self.shown(name)) appears twice in one object", at: at)
            }
            skipSpace()
            guard peek(UInt8(ascii: ":")) else { throw failure("expected ':' after a member name") }
            index += 1
            skipSpace()
            members.append((name, try value(depth: depth)))
            skipSpace()
            if peek(UInt8(ascii: ",")) {
                index += 1
            } else if peek(UInt8(ascii: "}")) {
                index += 1
                return .object(members)
            } else {
                throw failure(index == bytes.count ? "the text ends inside an object" : "expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maxDepth else { throw failure("nested deeper than \(maxDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipSpace()
        if peek(UInt8(ascii: "]")) {
            index += 1
            return .array(elements)
        }
        while true {
            skipSpace()
            elements.append(try value(depth: depth))
            skipSpace()
            if peek(UInt8(ascii: ",")) {
                index += 1
            } else if peek(UInt8(ascii: "]")) {
                index += 1
                return .array(elements)
            } else {
                throw failure(index == bytes.count ? "the text ends inside an array" : "expected ',' or ']'")
            }
        }
    }

    private mutating func string() throws(Failure) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) {
            if end > run { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
        }
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                flush(index)
                index += 1
                return String(scalars)
            }
            if b < 0x20 { throw failure("a control character must be escaped inside a string") }
            if b != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            flush(index)
            index += 1
            guard index < bytes.count else { break }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"): scalars.append(try unicodeEscape())
            default:
                index -= 2
                throw failure("an unknown escape sequence inside a string")
            }
            run = index
        }
        throw failure("the text ends inside a string")
    }

    /// The scalar of `\uXXXX` (the `\u` already read), joining a surrogate pair.
    private mutating func unicodeEscape() throws(Failure) -> Unicode.Scalar {
        let start = index - 2
        let first = try hex4()
        if (0xD800...0xDBFF).contains(first) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw failure("a \\u escape holds half a surrogate pair", at: start)
            }
            index += 2
            let second = try hex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw failure("a \\u escape holds half a surrogate pair", at: start) }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        }
        guard let scalar = Unicode.Scalar(first) else { throw failure("a \\u escape holds half a surrogate pair", at: start) }
        return scalar
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count, let digit = Self.hexValue(bytes[index]) else {
                throw failure("a \\u escape needs four hexadecimal digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func number() throws(Failure) -> String {
        let start = index
        if peek(UInt8(ascii: "-")) { index += 1 }
        if peek(UInt8(ascii: "0")) {
            index += 1
            if digitCount() > 0 { throw failure("a number may not have leading zeros", at: start) }
        } else if digitCount() == 0 {
            throw failure("expected digits in a number")
        }
        if peek(UInt8(ascii: ".")) {
            index += 1
            guard digitCount() > 0 else { throw failure("expected digits after a decimal point") }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            guard digitCount() > 0 else { throw failure("expected digits in an exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func digitCount() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index - start
    }

    private mutating func literal(_ word: String, _ value: JSONValue) throws(Failure) -> JSONValue {
        let expected = Array(word.utf8)
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw failure("expected a JSON value")
        }
        index += expected.count
        return value
    }

    // MARK: Helpers

    private mutating func skipSpace() {
        while index < bytes.count,
            bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D
        {
            index += 1
        }
    }

    private func peek(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    private static func hexValue(_ b: UInt8) -> UInt32? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(b - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(b - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(b - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private func failure(_ reason: String, at offset: Int? = nil) -> Failure {
        let offset = min(offset ?? index, bytes.count)
        var line = 1
        var lineStart = 0
        for (i, b) in bytes[..<offset].enumerated() where b == 0x0A {
            line += 1
            lineStart = i + 1
        }
        return Failure(reason: reason, offset: offset, line: line, column: offset - lineStart + 1)
    }

    /// `name` in quotes when it is short and plain enough to show (a name can be anything
    /// a client typed, a secret pasted in the wrong place included); a placeholder otherwise.
    static func shown(_ name: String) -> String {
        isShowable(name) ? "\"\(name)\"" : "(a name not shown)"
    }

    /// Whether `name` is 1–64 of `A-Z a-z 0-9 _ - .` and not shaped like a credential (16
    /// or more characters mixing letters and digits, as tokens and secrets are): safe to
    /// repeat in a message.
    static func isShowable(_ name: String) -> Bool {
        let bytes = name.utf8
        let isDigit = { (b: UInt8) in (0x30...0x39).contains(b) }
        let isLetter = { (b: UInt8) in (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
        let credentialShaped = bytes.count >= 16 && bytes.contains(where: isDigit) && bytes.contains(where: isLetter)
        return (1...64).contains(bytes.count) && !credentialShaped
            && bytes.allSatisfy { isDigit($0) || isLetter($0) || $0 == 0x5F || $0 == 0x2D || $0 == 0x2E }
    }
}
