import Gateway
import Testing

/// The shape of a configuration, read from its `Decodable` types by probing them.
struct ConfigurationSchemaTests {
    /// Reads itself as a number or a string, like `refreshLead`.
    enum Either: Decodable {
        case number(Int)
        case text(String)
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let n = try? c.decode(Int.self) { self = .number(n) } else { self = .text(try c.decode(String.self)) }
        }
    }

    /// Validates in its initializer: the probe's placeholders fail it.
    struct Strict: Decodable {
        var port: Int
        init(from decoder: any Decoder) throws {
            enum Keys: String, CodingKey { case port }
            port = try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .port)
            guard port > 0 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "0")) }
        }
    }

    final class Tree: Decodable {
        var name: String?
        var children: [Tree]?
    }

    struct Sample: Decodable {
        var host: String
        var port: Int?
        var on: Bool?
        var ratio: Double?
        var lead: Either?
        var strict: Strict?
        var statuses: [Int]?
        var extra: [String: String]?
        var tree: Tree?
        var items: [Strict]
    }

    @Test func everyKindOfFieldIsFound() {
        let s = ConfigurationSchema(Sample.self)
        #expect(s.node(at: ["host"]) == .string)
        #expect(s.node(at: ["port"]) == .integer)
        #expect(s.node(at: ["on"]) == .bool)
        #expect(s.node(at: ["ratio"]) == .number)
        #expect(s.node(at: ["lead"]) == .scalar)
        #expect(s.node(at: ["strict", "port"]) == .integer, "a type that refuses placeholders is still probed")
        #expect(s.node(at: ["statuses"]) == .array(.integer))
        #expect(s.node(at: ["extra"]) == .map)
        #expect(s.node(at: ["tree", "name"]) == .string)
        #expect(s.node(at: ["tree", "children", "0"]) == .map, "a type inside itself is taken whole, as JSON")
        #expect(s.node(at: ["items", "12", "port"]) == .integer)
        #expect(s.node(at: ["items", "x", "port"]) == nil)
        #expect(s.node(at: ["nope"]) == nil)
        #expect(s.node(at: ["host", "deeper"]) == nil)
    }
}
