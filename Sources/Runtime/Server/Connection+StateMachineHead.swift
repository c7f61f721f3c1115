import HTTPWire

extension Connection.StateMachine {
    /// Serialises a response head into `out`: the status line, `headers` as given, then the
    /// framing fields this machine decides, in this order: `Content-Length: contentLength`,
    /// `Transfer-Encoding: chunked`, `Connection: close` or `Connection: keep-alive`. The
    /// bytes are those of a ``ResponseHead`` whose headers had these fields added; the
    /// responder's headers are not copied to add them.
    static func serialize(
        status: Int, headers: HTTPHeaders, into out: inout [UInt8], contentLength: Int?, chunked: Bool, close: Bool,
        announceKeepAlive: Bool = false
    ) {
        ResponseHead(status: status, headers: headers).serialize(into: &out)
        appendFraming(
            into: &out, contentLength: contentLength, chunked: chunked, close: close, announceKeepAlive: announceKeepAlive)
    }

    /// Adds the framing fields to the serialised head in `out`, in this order:
    /// `Content-Length: contentLength`, `Transfer-Encoding: chunked`, `Connection: close`.
    /// `announceKeepAlive` (for an HTTP/1.0 client that asked to keep the connection, RFC 9112
    /// Appendix C.2.2, which otherwise waits for the close) adds `Connection: keep-alive`
    /// when the connection is not closing.
    static func appendFraming(
        into out: inout [UInt8], contentLength: Int?, chunked: Bool, close: Bool, announceKeepAlive: Bool = false
    ) {
        let keepAlive = announceKeepAlive && !close
        guard contentLength != nil || chunked || close || keepAlive else { return }
        // The head ends with an empty line: the fields go before it.
        out.removeLast(2)
        if let contentLength {
            out.appendUTF8("Content-Length: ")
            out.appendDecimal(contentLength)
            out.append(0x0D)
            out.append(0x0A)
        }
        if chunked { out.appendField(name: "Transfer-Encoding", value: "chunked") }
        if close { out.appendField(name: "Connection", value: "close") }
        if keepAlive { out.appendField(name: "Connection", value: "keep-alive") }
        out.append(0x0D)
        out.append(0x0A)
    }

    /// Appends a chunk's size line, `count` in hexadecimal and CRLF (what
    /// ``ChunkedEncoding/chunkHeader(_:)`` returns), without making a string or an array.
    static func appendChunkHeader(_ count: Int, to out: inout [UInt8]) {
        precondition(count >= 0, "a chunk cannot be shorter than nothing")
        var shift = 0
        while shift < Int.bitWidth - 4 && count >> (shift + 4) != 0 { shift += 4 }
        while shift >= 0 {
            let digit = UInt8((count >> shift) & 0xF)
            out.append(digit < 10 ? 0x30 + digit : 0x61 + digit - 10)
            shift -= 4
        }
        out.append(0x0D)
        out.append(0x0A)
    }
}
