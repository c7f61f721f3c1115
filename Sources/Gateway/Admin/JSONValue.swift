/// A JSON value as ``StrictJSON`` reads it: members keep their order, numbers their literal
/// text (so a range check sees exactly what was sent, `1e400` included).
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number as written, for example `-1.5e3`.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in the order they were written; their names are unique.
    case object([(name: String, value: JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.elementsEqual(b) { $0.name == $1.name && $0.value == $1.value }
        default: false
        }
    }

    /// The value of member `name`, when this is an object that has it.
    subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }

    /// What kind of value this is, for messages: `a string`, `null`, `an array`, …
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The value of an integer literal (`12`, `-3`, `1.0`, `1e3`: whatever JSON Schema calls
    /// an integer), or nil when the number has a fraction or does not fit an `Int`.
    static func integer(_ literal: String) -> Int? {
        var text = Substring(literal)
        let negative = text.first == "-"
        if negative { text = text.dropFirst() }
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            // A longer exponent is out of range whatever the digits.
            let written = text[text.index(after: e)...]
            guard written.count <= 8, let n = Int(written) else { return nil }
            exponent = n
            text = text[..<e]
        }
        var digits = ""
        if let dot = text.firstIndex(of: ".") {
            let fraction = text[text.index(after: dot)...]
            exponent -= fraction.count
            digits = String(text[..<dot] + fraction)
        } else {
            digits = String(text)
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        var significant = Substring(digits.drop { $0 == "0" })
        if significant.isEmpty { return 0 }
        while significant.last == "0" {
            significant = significant.dropLast()
            exponent += 1
        }
        guard exponent >= 0, significant.count + exponent <= 19 else { return nil }
        var value = 0
        for d in significant + String(repeating: "0", count: exponent) {
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(d.asciiValue! - 48))
            guard !o1, !o2 else { return nil }
            value = s
        }
        return negative ? -value : value
    }
}
