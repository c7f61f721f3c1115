import Foundation
import Testing

@testable import Gateway

/// The strict JSON reader: what it accepts, what it refuses and where it says the problem is.
@Suite struct StrictJSONTests {
    func parse(_ text: String) throws(StrictJSON.Failure) -> JSONValue { try StrictJSON.parse(Array(text.utf8)) }

    func failure(_ bytes: [UInt8], maxDepth: Int = StrictJSON.defaultMaxDepth) -> StrictJSON.Failure? {
        do {
            _ = try StrictJSON.parse(bytes, maxDepth: maxDepth)
            return nil
        } catch {
            return error
        }
    }

    func failure(_ text: String) -> StrictJSON.Failure? { failure(Array(text.utf8)) }

    @Test func wellFormedDocumentsReadAsWritten() throws {
        let value = try parse(#" {"a":[1,-2.5e3,true,false,null],"b":{"c":"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"},"d":{}} "#)
        #expect(value["a"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null]))
        #expect(value["b"]?["c"] == .string("x\"\\/\u{08}\u{0C}\n\r\té😀"))
        #expect(value["d"] == .object([]))
        #expect(try parse("\"é\"") == .string("é"))
        #expect(try StrictJSON.parse([0xEF, 0xBB, 0xBF] + Array("[]".utf8)) == .array([]), "a BOM is skipped")
        guard case .object(let members) = try parse(#"{"z":1,"a":2}"#) else { throw Failure() }
        #expect(members.map(\.name) == ["z", "a"], "member order is kept")
    }

    struct Failure: Error {}

    @Test func mistakesAreRefusedWithTheirPlace() {
        let cases: [(String, String, Int, Int)] = [
            ("", "empty", 1, 1),
            (#"{"a":1,}"#, "member name", 1, 8),
            (#"{"a":1 "b":2}"#, "',' or '}'", 1, 8),
            ("{\n  \"a\": 1,\n  \"a\": 2\n}", "appears twice", 3, 3),
            (#"[1,2"#, "ends inside an array", 1, 5),
            (#""abc"#, "ends inside a string", 1, 5),
            ("[01]", "leading zeros", 1, 2),
            ("[1.]", "decimal point", 1, 4),
            ("[1e]", "exponent", 1, 4),
            ("[-]", "digits", 1, 3),
            ("[+1]", "expected a JSON value", 1, 2),
            ("[.5]", "expected a JSON value", 1, 2),
            ("[tru]", "expected a JSON value", 1, 2),
            ("[NaN]", "expected a JSON value", 1, 2),
            ("[Infinity]", "expected a JSON value", 1, 2),
            (#"["\x"]"#, "unknown escape", 1, 3),
            (#"["\u12"]"#, "four hexadecimal digits", 1, 7),
            (#"["\udc00"]"#, "surrogate", 1, 3),
            (#"["\ud800x"]"#, "surrogate", 1, 3),
            (#"["\ud800\u0041"]"#, "surrogate", 1, 3),
            ("[\"a\tb\"]", "control character", 1, 4),
            ("{} {}", "after the JSON value", 1, 4),
            ("[1] // comment", "after the JSON value", 1, 5),
            ("{'a':1}", "member name", 1, 2),
        ]
        for (text, reason, line, column) in cases {
            guard let f = failure(text) else {
                Issue.record("accepted: \(text)")
                continue
            }
            #expect(f.reason.contains(reason), "\(text): \(f)")
            #expect(f.line == line && f.column == column, "\(text): \(f)")
        }
    }

    @Test func onlyUTF8IsRead() {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
            [0x22, 0xE2, 0x82, 0x22], Array("[]".utf16).flatMap { [UInt8($0), 0] }, [0x22, 0x00, 0x22],
        ] {
            #expect(failure(bytes)?.reason.contains("UTF-8") == true, "\(bytes)")
        }
        #expect(StrictJSON.firstInvalidUTF8([0x41, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80]) == nil)
        #expect(StrictJSON.firstInvalidUTF8([0x41, 0x42, 0x80]) == 2)
    }

    @Test func nestingIsBoundedWithoutExhaustingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(failure(deep)?.reason.contains("nested deeper than 64") == true)
        #expect(failure(Array("[[[]]]".utf8), maxDepth: 2)?.reason.contains("nested deeper than 2") == true)
        #expect(failure(Array("[[]]".utf8), maxDepth: 2) == nil)
    }

    @Test func integersAreReadExactly() {
        let cases: [(String, Int?)] = [
            ("0", 0), ("-0", 0), ("60", 60), ("1.0", 1), ("1e3", 1000), ("1E+3", 1000), ("150e-1", 15), ("0.0e5", 0),
            ("2147483647", 2_147_483_647), ("9223372036854775807", Int.max), ("-9223372036854775807", -Int.max),
            ("1.5", nil), ("1e-1", nil), ("1e400", nil), ("1e-400", nil), ("9223372036854775808", nil),
            ("123456789012345678901234567890", nil), ("1e999999999", nil), ("0.1e1", 1),
        ]
        for (literal, expected) in cases { #expect(JSONValue.integer(literal) == expected, "\(literal)") }
    }

    @Test func namesAreShownOnlyWhenPlain() {
        #expect(StrictJSON.shown("refresh_tokn") == "\"refresh_tokn\"")
        for name in ["", "a b", "a\u{0}", "a\r\nb", "<script>", String(repeating: "a", count: 65), "é"] {
            #expect(StrictJSON.shown(name) == "(a name not shown)", "\(name)")
        }
    }
}
