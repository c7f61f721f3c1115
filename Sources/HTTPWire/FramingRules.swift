/// How a message body is delimited.
public enum BodyFraming: Sendable, Equatable {
    /// No body.
    case none
    /// Exactly this many bytes.
    case length(UInt64)
    /// Chunked transfer coding.
    case chunked
}

/// The strict framing rules a proxy needs, as pure functions over parsed values.
///
/// The parser delivers what it read; these rules decide whether the message is
/// acceptable. They never quote a header value in an error, so credentials in a
/// malformed header cannot leak.
public enum FramingRules {
    /// Whether `byte` is an RFC 9110 `tchar`.
    @inlinable
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        // One bit per ASCII byte: ALPHA, DIGIT and !#$%&'*+-.^_`|~ (RFC 9110 §5.6.2).
        switch byte {
        case 0..<64: return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(byte) & 1 == 1
        case 64..<128: return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(byte - 64) & 1 == 1
        default: return false
        }
    }

    /// Whether `name` is a valid field name: one or more `tchar`.
    @inlinable
    public static func isValidFieldName<C: Collection>(_ name: C) -> Bool where C.Element == UInt8 {
        // Contiguous bytes (a native string's UTF-8, a buffer) take a plain loop.
        if let valid = name.withContiguousStorageIfAvailable({ !$0.isEmpty && $0.allSatisfy(isTokenByte) }) {
            return valid
        }
        return !name.isEmpty && name.allSatisfy(isTokenByte)
    }

    /// Whether `value` is a valid field value: visible characters, SP, HTAB and obs-text;
    /// no other control character, no DEL.
    @inlinable
    public static func isValidFieldValue<C: Collection>(_ value: C) -> Bool where C.Element == UInt8 {
        if let valid = value.withContiguousStorageIfAvailable({ $0.allSatisfy(isFieldValueByte) }) { return valid }
        return value.allSatisfy(isFieldValueByte)
    }

    /// ``isValidFieldName(_:)`` over bytes in memory: one test per byte, no closure.
    @inlinable
    public static func isValidFieldName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = name.baseAddress, !name.isEmpty else { return false }
        // The two halves of the `tchar` bit mask of ``isTokenByte(_:)``: one bit test per
        // byte, leaving at the first bad one. (A loop without the early exit is vectorised,
        // and SSE's shifts by a variable count made it half as fast as this one.)
        for i in 0..<name.count {
            let byte = base[i]
            let mask: UInt64 = byte < 64 ? 0x03FF_6CFA_0000_0000 : 0x57FF_FFFF_C7FF_FFFE
            if byte >= 128 || (mask >> UInt64(byte & 63)) & 1 == 0 { return false }
        }
        return true
    }

    /// ``isValidFieldValue(_:)`` over bytes in memory, eight at a time: a word with no byte
    /// below 0x20 and none equal to 0x7F is valid as it is, and only a word with one of them
    /// (a HTAB, most often) is looked at byte by byte.
    @inlinable
    public static func isValidFieldValue(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = value.baseAddress else { return true }
        let count = value.count
        var i = 0
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= count {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            // A byte below 0x20 (its high bit clear, so obs-text is not caught), or a zero
            // byte in `word ^ 0x7F7F…`, that is a DEL.
            let below = (word &- ones &* 0x20) & ~word & highs
            let del = word ^ (ones &* 0x7F)
            let hasDel = (del &- ones) & ~del & highs
            if below | hasDel != 0 {
                for j in i..<(i + 8) where !isFieldValueByte(base[j]) { return false }
            }
            i += 8
        }
        while i < count {
            if !isFieldValueByte(base[i]) { return false }
            i += 1
        }
        return true
    }

    /// Whether `byte` may stand in a field value: visible, SP, HTAB or obs-text.
    @inlinable
    public static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// Checks the HTTP version of a request.
    public static func checkVersion(major: Int, minor: Int) throws(WireError) {
        guard major == 1, minor == 0 || minor == 1 else {
            throw WireError(.unsupportedVersion, status: 505, "only HTTP/1.0 and HTTP/1.1 are supported")
        }
    }

    /// Decides the body framing of a request from its header fields (RFC 9112 §6).
    ///
    /// Rejects `Transfer-Encoding` with `Content-Length`, more than one `Content-Length`,
    /// a `Content-Length` that is not a plain decimal number, any transfer coding other
    /// than a single `chunked`, and `Transfer-Encoding` on HTTP/1.0.
    public static func requestFraming(headers: HTTPHeaders, major: Int, minor: Int) throws(WireError) -> BodyFraming {
        let lengths = headers[all: "content-length"]
        let codings = headers[all: "transfer-encoding"]
        if !codings.isEmpty && !lengths.isEmpty {
            throw WireError(.conflictingFraming, status: 400, "Transfer-Encoding and Content-Length must not both be present")
        }
        if !codings.isEmpty {
            if major == 1 && minor == 0 {
                throw WireError(
                    .unsupportedTransferEncoding, status: 400, "Transfer-Encoding is not allowed in an HTTP/1.0 request")
            }
            guard codings.count == 1, trimOWS(codings[0]).caseInsensitiveEquals("chunked") else {
                throw WireError(
                    .unsupportedTransferEncoding, status: 501,
                    "only a single Transfer-Encoding: chunked is supported")
            }
            return .chunked
        }
        if lengths.count > 1 {
            throw WireError(.duplicateContentLength, status: 400, "more than one Content-Length header")
        }
        if let raw = lengths.first {
            guard let n = parseContentLength(raw) else {
                throw WireError(
                    .invalidContentLength, status: 400, "Content-Length must be a decimal number of at most 18 digits")
            }
            return n == 0 ? .none : .length(n)
        }
        return .none
    }

    /// Parses a Content-Length value: 1 to 18 ASCII digits, optional surrounding whitespace.
    public static func parseContentLength(_ raw: String) -> UInt64? {
        let s = trimOWS(raw).utf8
        guard !s.isEmpty, s.count <= 18 else { return nil }
        var n: UInt64 = 0
        for b in s {
            guard b >= 48 && b <= 57 else { return nil }
            n = n * 10 + UInt64(b - 48)
        }
        return n
    }

    /// Checks the `Host` header: exactly one on HTTP/1.1, at most one on HTTP/1.0.
    public static func checkHost(headers: HTTPHeaders, major: Int, minor: Int) throws(WireError) {
        let hosts = headers.count(of: "host")
        if hosts > 1 {
            throw WireError(.duplicateHost, status: 400, "more than one Host header")
        }
        if hosts == 0 && major == 1 && minor == 1 {
            throw WireError(.missingHost, status: 400, "an HTTP/1.1 request needs a Host header")
        }
    }

    /// Interprets `Expect`: `true` for `100-continue`, nil for absent, throws 417 otherwise.
    public static func expectsContinue(headers: HTTPHeaders, major: Int, minor: Int) throws(WireError) -> Bool {
        let values = headers[all: "expect"]
        if values.isEmpty { return false }
        guard values.count == 1, trimOWS(values[0]).caseInsensitiveEquals("100-continue") else {
            throw WireError(.expectationFailed, status: 417, "the only supported expectation is 100-continue")
        }
        return major == 1 && minor == 1
    }

    /// Whether the connection stays open after this request (RFC 9112 §9.3).
    public static func keepAlive(headers: HTTPHeaders, major: Int, minor: Int) -> Bool {
        if !headers.contains("connection") { return !(major == 1 && minor == 0) }
        let tokens = connectionTokenList(headers)
        if tokens.contains("close") { return false }
        if major == 1 && minor == 0 { return tokens.contains("keep-alive") }
        return true
    }

    /// The lower-cased tokens of every `Connection` header, in order, without building a set
    /// (most messages name one or two).
    public static func connectionTokenList(_ headers: HTTPHeaders) -> [String] {
        var out: [String] = []
        forEachConnectionToken(headers) { out.append(String(decoding: $0, as: UTF8.self).asciiLowercased) }
        return out
    }

    /// Calls `body` with the bytes of each token of every `Connection` header, in order, as
    /// sent (not lower-cased) and without white space; makes no string.
    public static func forEachConnectionToken(_ headers: HTTPHeaders, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        headers.forEach(named: "connection") { bytes in
            var start = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: ",") { end += 1 }
                var lo = start
                var hi = end
                while lo < hi && (bytes[lo] == 0x20 || bytes[lo] == 0x09) { lo += 1 }
                while hi > lo && (bytes[hi - 1] == 0x20 || bytes[hi - 1] == 0x09) { hi -= 1 }
                if lo < hi { body(UnsafeBufferPointer(rebasing: bytes[lo..<hi])) }
                start = end + 1
            }
        }
    }

    /// `s` without leading and trailing SP / HTAB.
    public static func trimOWS(_ s: String) -> String {
        let u = Array(s.utf8)
        var lo = 0
        var hi = u.count
        while lo < hi && (u[lo] == 0x20 || u[lo] == 0x09) { lo += 1 }
        while hi > lo && (u[hi - 1] == 0x20 || u[hi - 1] == 0x09) { hi -= 1 }
        if lo == 0 && hi == u.count { return s }
        return String(decoding: u[lo..<hi], as: UTF8.self)
    }
}
