extension ConfigurationSchema {
    /// A decoder that records what it is asked for. Every decode succeeds with a placeholder
    /// (`""`, `0`, `false`, one array element) but for optionals, which are probed and then
    /// reported absent.
    final class Probe: Decoder, @unchecked Sendable {
        // Used by one decode at a time, on one thread: `node(of:)` makes and reads it.
        enum Asked {
            case nothing
            case keyed(Recorder)
            case unkeyed(Box)
            case single
        }

        final class Recorder {
            var fields: [Field] = []
            func record(_ name: String, _ node: Node) {
                if !fields.contains(where: { $0.name == name }) { fields.append(Field(name: name, node: node)) }
            }
        }

        final class Box { var node: Node = .scalar }

        var asked = Asked.nothing
        let codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: Any] = [:]
        /// Types being probed on the way here: a type that contains itself is a map from there.
        let visiting: [ObjectIdentifier]

        init(codingPath: [any CodingKey], visiting: [ObjectIdentifier]) {
            self.codingPath = codingPath
            self.visiting = visiting
        }

        /// The node of `type`: a plain scalar, or what its `init(from:)` asked for.
        static func node<T: Decodable>(of type: T.Type, codingPath: [any CodingKey] = [], visiting: [ObjectIdentifier] = [])
            -> Node
        {
            if let plain = plainNode(type) { return plain }
            let id = ObjectIdentifier(type)
            if visiting.contains(id) { return .map }
            let probe = Probe(codingPath: codingPath, visiting: visiting + [id])
            _ = try? T(from: probe)
            switch probe.asked {
            case .nothing, .single: return .scalar
            case .unkeyed(let box): return .array(box.node)
            case .keyed(let recorder): return recorder.fields.isEmpty ? .map : .object(recorder.fields)
            }
        }

        /// The node of a type the keyed and unkeyed containers decode natively.
        static func plainNode(_ type: Any.Type) -> Node? {
            switch type {
            case is String.Type: .string
            case is Bool.Type: .bool
            case is Double.Type, is Float.Type: .number
            case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type, is UInt.Type, is UInt8.Type,
                is UInt16.Type, is UInt32.Type, is UInt64.Type:
                .integer
            default: nil
            }
        }

        /// A placeholder of a plain type.
        static func placeholder<T>(_ type: T.Type) -> T? {
            switch type {
            case is String.Type: "" as? T
            case is Bool.Type: false as? T
            case is Double.Type: 0.0 as? T
            case is Float.Type: Float(0) as? T
            case is Int.Type: 0 as? T
            case is Int8.Type: Int8(0) as? T
            case is Int16.Type: Int16(0) as? T
            case is Int32.Type: Int32(0) as? T
            case is Int64.Type: Int64(0) as? T
            case is UInt.Type: UInt(0) as? T
            case is UInt8.Type: UInt8(0) as? T
            case is UInt16.Type: UInt16(0) as? T
            case is UInt32.Type: UInt32(0) as? T
            case is UInt64.Type: UInt64(0) as? T
            default: nil
            }
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            let recorder: Recorder
            if case .keyed(let r) = asked { recorder = r } else { recorder = Recorder() }
            asked = .keyed(recorder)
            return KeyedDecodingContainer(KeyedProbe<Key>(probe: self, recorder: recorder))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let box = Box()
            asked = .unkeyed(box)
            return UnkeyedProbe(probe: self, box: box)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            if case .nothing = asked { asked = .single }
            return SingleProbe(codingPath: codingPath)
        }
    }

    /// The failure that ends a probe where no value can be made up.
    struct ProbeEnd: Error {}

    struct KeyedProbe<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let probe: Probe
        let recorder: Probe.Recorder
        var codingPath: [any CodingKey] { probe.codingPath }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let node = Probe.node(of: type, codingPath: codingPath + [key], visiting: probe.visiting)
            recorder.record(key.stringValue, node)
            if let value = Probe.placeholder(type) { return value }
            let inner = Probe(codingPath: codingPath + [key], visiting: probe.visiting)
            return try T(from: inner)
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            recorder.record(key.stringValue, Probe.node(of: type, codingPath: codingPath + [key], visiting: probe.visiting))
            return nil
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            throw ProbeEnd()
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw ProbeEnd() }
        func superDecoder() throws -> any Decoder { throw ProbeEnd() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw ProbeEnd() }
    }

    struct UnkeyedProbe: UnkeyedDecodingContainer {
        let probe: Probe
        let box: Probe.Box
        var codingPath: [any CodingKey] { probe.codingPath }
        var count: Int? { 1 }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex >= 1 }
        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            box.node = Probe.node(of: type, codingPath: codingPath, visiting: probe.visiting)
            currentIndex += 1
            if let value = Probe.placeholder(type) { return value }
            return try T(from: Probe(codingPath: codingPath, visiting: probe.visiting))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            throw ProbeEnd()
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw ProbeEnd() }
        mutating func superDecoder() throws -> any Decoder { throw ProbeEnd() }
    }

    struct SingleProbe: SingleValueDecodingContainer {
        let codingPath: [any CodingKey]
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if let value = Probe.placeholder(type) { return value }
            throw ProbeEnd()
        }
    }
}
