/// A response status line and header fields, and their serialisation.
public struct ResponseHead: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// The header fields in the order they are written.
    public var headers: HTTPHeaders

    /// Creates a head.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.headers = headers
    }

    /// Appends `HTTP/1.1 <status> <reason>\r\n`, the fields and the empty line to `out`.
    ///
    /// Field names and values are written as given; callers validate what they did not
    /// create themselves (``FramingRules/isValidFieldValue(_:)``).
    public func serialize(into out: inout [UInt8]) {
        serialize(into: &out) { _ in false }
    }

    /// ``serialize(into:)`` without the fields whose name `omit` picks (it sees every name,
    /// in order, once).
    public func serialize(into out: inout [UInt8], omitting omit: (UnsafeBufferPointer<UInt8>) -> Bool) {
        out.appendUTF8("HTTP/1.1 ")
        if (100...999).contains(status) {
            out.append(UInt8(48 + status / 100))
            out.append(UInt8(48 + status / 10 % 10))
            out.append(UInt8(48 + status % 10))
        } else {
            out.appendUTF8(String(status))
        }
        out.append(0x20)
        out.appendUTF8(ResponseHead.reason(for: status))
        out.append(0x0D)
        out.append(0x0A)
        headers.serialize(into: &out, omitting: omit)
        out.append(0x0D)
        out.append(0x0A)
    }

    /// Whether a response with this status may carry a body (RFC 9110 §6.4.1).
    public static func allowsBody(status: Int) -> Bool {
        !(100..<200).contains(status) && status != 204 && status != 304
    }

    /// The reason phrase for `status`.
    public static func reason(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}

/// Chunked transfer coding for response bodies (RFC 9112 §7.1).
public enum ChunkedEncoding {
    /// The chunk-size line for a chunk of `count` bytes.
    public static func chunkHeader(_ count: Int) -> [UInt8] {
        Array((String(count, radix: 16) + "\r\n").utf8)
    }

    /// The CRLF that ends a chunk's data.
    public static let chunkTrailer: [UInt8] = [0x0D, 0x0A]

    /// The last chunk and the empty trailer section.
    public static let terminator: [UInt8] = Array("0\r\n\r\n".utf8)
}
