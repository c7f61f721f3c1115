internal import Foundation

/// Looks up dotted paths (`data.token.value`) in a decoded JSON object.
enum JSONPath {
    /// The value at `path`, or `nil`. Array elements are addressed by index (`items.0`).
    static func value(at path: String, in root: Any) -> Any? {
        var current: Any = root
        for component in path.split(separator: ".") {
            if let object = current as? [String: Any], let next = object[String(component)] {
                current = next
            } else if let array = current as? [Any], let index = Int(component),
                array.indices.contains(index)
            {
                current = array[index]
            } else {
                return nil
            }
        }
        return current is NSNull ? nil : current
    }

    /// The string at `path` (numbers are rendered).
    static func string(at path: String, in root: Any) -> String? {
        switch value(at: path, in: root) {
        case let string as String: string
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    /// The number at `path` (numeric strings are parsed).
    static func number(at path: String, in root: Any) -> Double? {
        switch value(at: path, in: root) {
        case let number as NSNumber: number.doubleValue
        case let string as String: Double(string.trimmingCharacters(in: .whitespaces))
        default: nil
        }
    }
}
