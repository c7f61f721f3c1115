/// The shape of a `Decodable` configuration type, read from the type itself: every field,
/// nested ones and array elements included, with the kind of value it takes. Nothing is
/// listed by hand, so a field added to the configuration later is covered as it is.
///
/// It is found by decoding the type from a probe that answers every question a decoder
/// asks and writes down each key asked for: synthesized `init(from:)` asks for every
/// property, custom ones for what they read. An optional field is answered "absent" after
/// its own type has been probed, so no placeholder value has to pass validation.
///
/// ```swift
/// let schema = ConfigurationSchema(GatewayConfiguration.self)
/// schema.node(at: ["authorization", "tokenEndpoint"])   // .string
/// schema.node(at: ["routes", "0", "prefix"])            // .string (any index)
/// ```
public struct ConfigurationSchema: Sendable {
    /// What a field takes.
    public indirect enum Node: Sendable, Equatable {
        /// A JSON string.
        case string
        /// A JSON integer.
        case integer
        /// A JSON number.
        case number
        /// `true` or `false`.
        case bool
        /// One value of a type that reads it itself (a number or a string such as
        /// `refreshLead`): given as text, its JSON type follows from the text.
        case scalar
        /// An object with these fields, in the order the type reads them.
        case object([Field])
        /// An array of elements of one kind.
        case array(Node)
        /// An object whose member names are data (a dictionary): given whole, as JSON.
        case map

        /// Whether the value is given as one piece of text (a scalar, or a list of them).
        public var isLeaf: Bool {
            switch self {
            case .string, .integer, .number, .bool, .scalar: true
            case .array(let element): element.isScalar
            case .object, .map: false
            }
        }

        /// Whether this is a single scalar.
        public var isScalar: Bool {
            switch self {
            case .string, .integer, .number, .bool, .scalar: true
            default: false
            }
        }
    }

    /// A field of an object: its JSON name and kind.
    public struct Field: Sendable, Equatable {
        /// The JSON member name.
        public var name: String
        /// What it takes.
        public var node: Node
    }

    /// The root: an object.
    public let root: Node

    /// The schema of `type`.
    public init<T: Decodable>(_ type: T.Type) {
        root = Probe.node(of: type)
    }

    /// The node at `path` (member names, and decimal indices into arrays), or nil when the
    /// configuration has no such field.
    public func node(at path: [String]) -> Node? {
        var here = root
        for component in path {
            switch here {
            case .object(let fields):
                guard let field = fields.first(where: { $0.name == component }) else { return nil }
                here = field.node
            case .array(let element):
                guard !component.isEmpty, component.utf8.allSatisfy({ (0x30...0x39).contains($0) }), component.utf8.count <= 6
                else { return nil }
                here = element
            default:
                return nil
            }
        }
        return here
    }
}
