/// A buffered HTTP request, independent of any HTTP stack.
public struct HTTPRequestValue: Sendable, CustomStringConvertible {
    /// The method, e.g. `POST`.
    public var method: String
    /// The absolute URL.
    public var url: String
    /// Header fields in order; names compare case-insensitively.
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: [UInt8]
    /// The certificate to show in the TLS handshake (mutual TLS), if any.
    public var clientCertificate: ClientCertificate?

    /// Creates a request.
    public init(
        method: String, url: String, headers: [(name: String, value: String)] = [],
        body: [UInt8] = [], clientCertificate: ClientCertificate? = nil
    ) {
        self.clientCertificate = clientCertificate
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// The method and URL only: headers and body may hold secrets.
    public var description: String { "\(method) \(url) (\(body.count) bytes)" }
}

extension String {
    /// ASCII case-insensitive equality, as header names compare.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) {
            let lx = (x >= 65 && x <= 90) ? x + 32 : x
            let ly = (y >= 65 && y <= 90) ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }
}
