/// How an upstream response's body is delimited (RFC 9112 §6.3).
public enum ResponseFraming: Sendable, Equatable {
    /// No body: an interim response, `204`, `304`, an answer to `HEAD`, or `Content-Length: 0`.
    case none
    /// Exactly this many bytes.
    case length(UInt64)
    /// Chunked transfer coding.
    case chunked
    /// Everything until the upstream closes the connection.
    case untilClose
}

extension FramingRules {
    /// The framing of an upstream response, decided strictly: a proxy that guesses where a
    /// response ends can send its client the start of another.
    ///
    /// Refused with 502, whatever the status: a `Transfer-Encoding` that is not exactly one
    /// `chunked` (any other coding, a list, the field twice), `Transfer-Encoding` with
    /// `Content-Length`, more than one `Content-Length`, or one that is not a decimal number.
    /// `1xx`, `204`, `304` and an answer to `HEAD` have no body whatever their fields say
    /// (RFC 9110 §6.4.1, §9.3.2).
    public static func responseFraming(status: Int, headers: HTTPHeaders, answersHEAD: Bool) throws(WireError) -> ResponseFraming {
        let lengths = headers[all: "content-length"]
        let codings = headers[all: "transfer-encoding"]
        var framing = ResponseFraming.untilClose
        if !codings.isEmpty {
            guard lengths.isEmpty else {
                throw WireError(.conflictingFraming, status: 502, "the upstream sent both Transfer-Encoding and Content-Length")
            }
            guard codings.count == 1, trimOWS(codings[0]).caseInsensitiveEquals("chunked") else {
                throw WireError(
                    .unsupportedTransferEncoding, status: 502, "the upstream's Transfer-Encoding is not exactly chunked")
            }
            framing = .chunked
        } else if !lengths.isEmpty {
            guard lengths.count == 1 else {
                throw WireError(.duplicateContentLength, status: 502, "the upstream sent more than one Content-Length")
            }
            guard let n = parseContentLength(lengths[0]) else {
                throw WireError(.invalidContentLength, status: 502, "the upstream's Content-Length is not a decimal number")
            }
            framing = n == 0 ? .none : .length(n)
        }
        if answersHEAD || !ResponseHead.allowsBody(status: status) { return .none }
        return framing
    }

    /// Whether a connection may carry another exchange after a bodiless response whose
    /// fields announce a body anyway: not after a `204` that announces one (which it must
    /// never do, RFC 9110 §8.6, RFC 9112 §6.1), since bytes the upstream may send after its
    /// head would be read as the next response. A `304` or an answer to `HEAD` announces
    /// the size of what a `GET` would get, and is reused.
    public static func reusableAfterBodiless(status: Int, headers: HTTPHeaders) -> Bool {
        guard status == 204 || (100..<200).contains(status) else { return true }
        if headers.contains("transfer-encoding") { return false }
        if let length = headers[first: "content-length"], parseContentLength(length) != 0 { return false }
        return true
    }
}
