import HTTPWire

/// The bytes of an upstream request's head, and how its body is framed. Pure.
struct HTTP1RequestHead {
    /// How the body that follows the head is delimited.
    enum Framing: Equatable {
        /// No body.
        case none
        /// `Content-Length` bytes.
        case length(UInt64)
        /// Chunked transfer coding (a streamed body of unknown length).
        case chunked
    }

    /// The serialised head, ending with the empty line.
    let bytes: [UInt8]
    /// The body framing the head announced.
    let framing: Framing

    /// Serialises `request` for `target` on `origin`. Adds `Host` when the request has
    /// none, and the framing field; refuses (``RuntimeError/Code/invalidRequest``, nothing
    /// sent) a header a peer would read differently: a name that is not a token, a value
    /// with a control character, or a framing field of the caller's own.
    static func make(_ request: UpstreamRequest, target: String, origin: HTTP1Origin) throws(RuntimeError) -> HTTP1RequestHead {
        guard FramingRules.isValidFieldValue(target.utf8), !target.utf8.contains(0x20), request.method.utf8.allSatisfy(FramingRules.isTokenByte),
            !request.method.isEmpty
        else {
            throw .upstream(.invalidRequest, "the request line cannot be sent as it is; nothing was sent")
        }
        let framing: Framing
        switch request.body {
        case .none:
            // A method that defines a body announces an empty one, as curl does.
            framing = request.method == "POST" || request.method == "PUT" || request.method == "PATCH" ? .length(0) : .none
        case .bytes(let b): framing = .length(UInt64(b.count))
        case .stream(_, let length?): framing = .length(length)
        case .stream(_, nil): framing = .chunked
        }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.appendUTF8(request.method)
        out.append(0x20)
        out.appendUTF8(target)
        out.appendUTF8(" HTTP/1.1\r\n")
        try request.checkHeaderFields()
        // The client frames the body itself (as libcurl would).
        request.headers.serialize(into: &out) { name in
            switch name.count {
            case 14: HTTPHeaders.equalsIgnoringCase(name, "content-length")
            case 17: HTTPHeaders.equalsIgnoringCase(name, "transfer-encoding")
            default: false
            }
        }
        let hasHost = request.headers.contains("host")
        if !hasHost {
            out.appendUTF8("Host: ")
            out.appendUTF8(origin.authority)
            out.appendUTF8("\r\n")
        }
        switch framing {
        case .none: break
        case .length(let n):
            out.appendUTF8("Content-Length: ")
            out.appendDecimal(n)
            out.appendUTF8("\r\n")
        case .chunked:
            out.appendUTF8("Transfer-Encoding: chunked\r\n")
        }
        out.append(0x0D)
        out.append(0x0A)
        return HTTP1RequestHead(bytes: out, framing: framing)
    }
}
