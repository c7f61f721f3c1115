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
    static func make(_ request: UpstreamRequest, target: String, origin: UpstreamOrigin) throws(RuntimeError) -> HTTP1RequestHead
    {
        var method = request.method
        var target = target
        // Over the bytes in memory: a method is one or more token bytes, like a field name.
        let sendable =
            method.withUTF8 { FramingRules.isValidFieldName($0) }
            && target.withUTF8 { FramingRules.isValidFieldValue($0) && !$0.contains(0x20) }
        guard sendable else {
            throw .upstream(.invalidRequest, "the request line cannot be sent as it is; nothing was sent")
        }
        let framing: Framing
        switch request.body {
        case .none:
            // A method that defines a body announces an empty one, as curl does.
            framing = method == "POST" || method == "PUT" || method == "PATCH" ? .length(0) : .none
        case .bytes(let b): framing = .length(UInt64(b.count))
        case .stream(_, let length?): framing = .length(length)
        case .stream(_, nil): framing = .chunked
        }
        var out: [UInt8] = []
        // Room for the whole head: it is not grown (and copied) on the way.
        out.reserveCapacity(request.headers.byteCount + method.utf8.count + target.utf8.count + origin.authority.utf8.count + 96)
        out.appendUTF8(method)
        out.append(0x20)
        out.appendUTF8(target)
        out.appendUTF8(" HTTP/1.1\r\n")
        try request.checkHeaderFields()
        // The client frames the body itself (as libcurl would). Whether a `Host` is among the
        // fields is seen on the way, not in a second pass.
        var hasHost = false
        request.headers.serialize(into: &out) { name in
            switch name.count {
            case 4:
                if HTTPHeaders.equalsIgnoringCase(name, "host") { hasHost = true }
                return false
            case 14: return HTTPHeaders.equalsIgnoringCase(name, "content-length")
            case 17: return HTTPHeaders.equalsIgnoringCase(name, "transfer-encoding")
            default: return false
            }
        }
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
