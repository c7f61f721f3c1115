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
    public static func responseFraming(status: Int, headers: HTTPHeaders, answersHEAD: Bool) throws(WireError) -> ResponseFraming
    {
        // Over the fields' bytes, with no string made: this runs for every proxied answer.
        var codings = 0
        var onlyChunked = true
        headers.forEach(named: "transfer-encoding" as StaticString) { value in
            codings += 1
            if !equalsIgnoringCase(trimmingOWS(value), "chunked") { onlyChunked = false }
        }
        var lengths = 0
        var length: UInt64?
        headers.forEach(named: "content-length" as StaticString) { value in
            lengths += 1
            length = contentLength(trimmingOWS(value))
        }
        var framing = ResponseFraming.untilClose
        if codings > 0 {
            guard lengths == 0 else {
                throw WireError(.conflictingFraming, status: 502, "the upstream sent both Transfer-Encoding and Content-Length")
            }
            guard codings == 1, onlyChunked else {
                throw WireError(
                    .unsupportedTransferEncoding, status: 502, "the upstream's Transfer-Encoding is not exactly chunked")
            }
            framing = .chunked
        } else if lengths > 0 {
            guard lengths == 1 else {
                throw WireError(.duplicateContentLength, status: 502, "the upstream sent more than one Content-Length")
            }
            guard let n = length else {
                throw WireError(.invalidContentLength, status: 502, "the upstream's Content-Length is not a decimal number")
            }
            framing = n == 0 ? .none : .length(n)
        }
        if answersHEAD || !ResponseHead.allowsBody(status: status) { return .none }
        return framing
    }

    /// `value` without the spaces and tabs around it.
    private static func trimmingOWS(_ value: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var lo = 0
        var hi = value.count
        while lo < hi && (value[lo] == 0x20 || value[lo] == 0x09) { lo += 1 }
        while hi > lo && (value[hi - 1] == 0x20 || value[hi - 1] == 0x09) { hi -= 1 }
        return UnsafeBufferPointer(rebasing: value[lo..<hi])
    }

    /// Whether `value` is `word` (lower-case letters), compared without ASCII case.
    private static func equalsIgnoringCase(_ value: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
        word.withUTF8Buffer { w in value.count == w.count && zip(value, w).allSatisfy { $0 | 0x20 == $1 } }
    }

    /// 1 to 18 ASCII digits as a number, as ``parseContentLength(_:)`` reads them.
    private static func contentLength(_ digits: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var n: UInt64 = 0
        for b in digits {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            n = n * 10 + UInt64(b - 0x30)
        }
        return n
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
