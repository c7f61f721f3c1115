/// A buffered HTTP response, independent of any HTTP stack.
public struct HTTPResponseValue: Sendable, CustomStringConvertible {
    /// The status code.
    public var status: Int
    /// Header fields in order; names compare case-insensitively.
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// The status only: headers and body may hold secrets.
    public var description: String { "HTTP \(status) (\(body.count) bytes)" }
}
