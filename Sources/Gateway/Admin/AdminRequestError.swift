import HTTPWire

/// Why the admin API refused a request it could read: the status, a stable code, a
/// sentence, and the body member or query parameter at fault.
///
/// The statuses, as `openapi/authgate.yaml` documents them:
/// - 400: the request cannot be read as meant — a query parameter that is unknown, repeated
///   or malformed, a body where the endpoint takes none, a body that is not JSON (syntax,
///   UTF-8, a member given twice, nesting too deep);
/// - 404: `?session=` names no configured session;
/// - 415: a login body that is not `application/json` (UTF-8);
/// - 422: well-formed JSON that is not a valid login: not an object, a member missing,
///   unknown, of the wrong type, empty, out of range or with characters its field does not
///   allow, an unknown `grant_type`.
///
/// Messages name the member or parameter and never repeat a value a client sent.
struct AdminRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problem `type` code (`https://authgate.dev/problems/<code>`).
    enum Code: String, Sendable, CaseIterable {
        case invalidQuery = "invalid-query"
        case unexpectedBody = "unexpected-body"
        case malformedJSON = "malformed-json"
        case unsupportedMediaType = "unsupported-media-type"
        case unknownSession = "unknown-session"
        case invalidBody = "invalid-body"
        case missingField = "missing-field"
        case unknownField = "unknown-field"
        case invalidField = "invalid-field"
        case unsupportedGrantType = "unsupported-grant-type"

        var status: Int {
            switch self {
            case .invalidQuery, .unexpectedBody, .malformedJSON: 400
            case .unknownSession: 404
            case .unsupportedMediaType: 415
            case .invalidBody, .missingField, .unknownField, .invalidField, .unsupportedGrantType: 422
            }
        }
    }

    let code: Code
    let detail: String
    /// The body member at fault (`username`), when one is.
    let field: String?
    /// The query parameter at fault (`session`), when one is.
    let parameter: String?

    init(_ code: Code, _ detail: String, field: String? = nil, parameter: String? = nil) {
        self.code = code
        self.detail = detail
        self.field = field
        self.parameter = parameter
    }

    var status: Int { code.status }

    var description: String { "\(status) \(code.rawValue): \(detail)" }

    /// The problem document. `field` and `parameter` are there only when they are names
    /// AuthGate defines or that are plain enough to repeat (``StrictJSON/isShowable(_:)``).
    var problem: Problem {
        var extensions: [(String, String)] = []
        if let field, StrictJSON.isShowable(field) { extensions.append(("field", Problem.quote(field))) }
        if let parameter, StrictJSON.isShowable(parameter) { extensions.append(("parameter", Problem.quote(parameter))) }
        return GatewayProblem.make(code.rawValue, status, detail, extensions)
    }
}
