private import CHTTPParser

/// One step of reading a response stream.
public enum ResponseEvent {
    /// All input was consumed; feed more.
    case needMoreData
    /// The final (non-1xx) status line and header fields.
    case head(status: Int, headers: HTTPHeaders)
    /// Body bytes, decoded from their transfer coding; the buffer points into the input
    /// given to `parse`.
    case body(UnsafeRawBufferPointer)
    /// The response ended. `keepAlive` says whether the connection may carry another
    /// exchange (HTTP/1.1 without `Connection: close`, and a body not delimited by close).
    case end(keepAlive: Bool)
    /// The upstream answered `101 Switching Protocols` to an upgrade request (after
    /// ``ResponseParser/expectUpgrade()``): these are its header fields, and every byte after
    /// the ones consumed belongs to the new protocol. The parser reads nothing more.
    case switched(headers: HTTPHeaders)
    /// The response is not valid HTTP/1.x; the connection cannot be used again.
    case error(WireError)
}

/// A pull-style HTTP/1.x response reader over Debian's http-parser, the counterpart of
/// ``RequestParser`` for the upstream side of the proxy.
///
/// Interim (1xx) responses are read and skipped; a response to `HEAD` is read without a
/// body when ``expectNoBody()`` is called before its head arrives. The body is framed
/// strictly (``FramingRules/responseFraming(status:headers:answersHEAD:)``): framing fields
/// a proxy would have to guess at are refused, and `204` and `304` never have a body. A field
/// name that is not a token or a value with a control character refuses the whole response
/// (RFC 9110 §5.5, as nginx and HAProxy do): a proxy that dropped the field would pass on a
/// message other than the one sent. Each obs-fold becomes the spaces that follow it
/// (RFC 9112 §5.2). Chunked bodies get
/// the strictness http-parser lacks (``ChunkFramingScanner``). Not thread-safe: one
/// connection owns one.
public final class ResponseParser {
    private let parser: UnsafeMutablePointer<http_parser>
    private let settings: UnsafeMutablePointer<http_parser_settings>
    private let limits: HTTPLimits

    private var fields = HeaderFieldAccumulator()
    private var headBytes = 0
    /// Field-name and value bytes of the head being read, counted as they arrive.
    private var fieldBytes = 0
    private var headDone = false
    /// Whether the head's line under way at the end of the last input had a colon: only
    /// read to tell an invalid name from an invalid value when http-parser refuses a byte.
    private var lineHasColon = false
    private var noBody = false
    /// Whether the connection may carry another exchange once this response ends, as far as
    /// its framing fields go (``FramingRules/reusableAfterBodiless(status:headers:)``).
    private var reusable = true
    private var upgradeExpected = false
    /// The header fields of a `101` that switched protocols, until `parse` returns them.
    private var switchedHead: HTTPHeaders?
    private var chunkScanner: ChunkFramingScanner?
    private var violation: WireError?

    private var pendingHead: (Int, HTTPHeaders)?
    private var pendingBody: UnsafeRawBufferPointer?
    private var pendingEnd: Bool?
    private var failed: WireError?

    /// Creates a parser; `limits.maxHeadBytes` and `maxHeaderCount` bound a response head.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
        parser = .allocate(capacity: 1)
        settings = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_RESPONSE)
        http_parser_settings_init(settings)
        settings.pointee.on_message_begin = { p in ResponseParser.with(p) { $0.onMessageBegin() } }
        settings.pointee.on_header_field = { p, at, n in ResponseParser.with(p) { $0.onField(at, n) } }
        settings.pointee.on_header_value = { p, at, n in ResponseParser.with(p) { $0.onValue(at, n) } }
        settings.pointee.on_headers_complete = { p in ResponseParser.with(p) { $0.onHeadersComplete() } }
        settings.pointee.on_body = { p, at, n in ResponseParser.with(p) { $0.onBody(at, n) } }
        settings.pointee.on_message_complete = { p in ResponseParser.with(p) { $0.onMessageComplete() } }
        prepare()
    }

    private func prepare() {
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        // No leniency: http-parser refuses a field with a character HTTP does not allow, and
        // `flushField` checks each finished field again with the same rules as requests.
        parser.pointee.lenient_http_headers = 0
    }

    deinit {
        parser.deallocate()
        settings.deallocate()
    }

    /// Makes the parser ready for the next response on the same connection.
    public func reset() {
        http_parser_init(parser, HTTP_RESPONSE)
        prepare()
        headDone = false
        headBytes = 0
        lineHasColon = false
        noBody = false
        reusable = true
        upgradeExpected = false
        switchedHead = nil
        chunkScanner = nil
        violation = nil
        failed = nil
        pendingHead = nil
        pendingBody = nil
        pendingEnd = nil
    }

    /// The next response answers a `HEAD` request: it has no body, whatever its head says.
    public func expectNoBody() { noBody = true }

    /// The next response answers an upgrade request: a `101` with `Upgrade` and
    /// `Connection: upgrade` ends HTTP on the connection (``ResponseEvent/switched(headers:)``).
    /// Without this call such a `101` is refused (`upgrade-unsupported`, 502).
    public func expectUpgrade() { upgradeExpected = true }

    /// Whether any byte of the current response has been read.
    public var started: Bool { headBytes > 0 || headDone }

    /// Reads from `input` until an event; returns it and the bytes consumed.
    public func parse(_ input: UnsafeRawBufferPointer) -> (ResponseEvent, Int) {
        if let failed { return (.error(failed), 0) }
        guard let base = input.baseAddress, input.count > 0 else { return (.needMoreData, 0) }
        let scanningHead = !headDone
        let n = http_parser_execute(parser, settings, base.assumingMemoryBound(to: CChar.self), input.count)
        fields.detach()
        if scanningHead {
            headBytes += n
            if !headDone { lineHasColon = Self.colonOnLastLine(input, before: n) ?? lineHasColon }
        } else if chunkScanner != nil, let e = chunkScanner!.scan(UnsafeRawBufferPointer(rebasing: input[0..<n])) {
            return fail(e, n)
        }
        let errno = http_errno(rawValue: parser.pointee.http_errno)
        if errno == HPE_PAUSED {
            http_parser_pause(parser, 0)
            if let (status, headers) = pendingHead {
                pendingHead = nil
                return (.head(status: status, headers: headers), n)
            }
            if let body = pendingBody {
                pendingBody = nil
                return (.body(body), n)
            }
            if let keepAlive = pendingEnd {
                pendingEnd = nil
                return (.end(keepAlive: keepAlive), n)
            }
            return (.needMoreData, n)
        }
        if errno == HPE_INVALID_HEADER_TOKEN && violation == nil {
            return fail(invalidFieldInName(before: n, of: input) ? Self.invalidFieldName : Self.invalidFieldValue, n)
        }
        if errno != HPE_OK { return fail(violation ?? Self.error(for: errno), n) }
        if parser.pointee.upgrade != 0 {
            if let switched = switchedHead {
                // http-parser stopped right after the 101's head: the rest is the new protocol.
                switchedHead = nil
                failed = WireError(.upgradeUnsupported, status: 502, "the connection switched protocols")
                return (.switched(headers: switched), n)
            }
            return fail(WireError(.upgradeUnsupported, status: 502, "the upstream switched protocols"), n)
        }
        if !headDone && headBytes > limits.maxHeadBytes { return fail(Self.headTooLarge(limits), n) }
        return (.needMoreData, n)
    }

    /// The connection reached end of file: ends a body delimited by close, else fails (the
    /// response was cut short, or never began).
    public func finishInput() -> ResponseEvent {
        if let failed { return .error(failed) }
        if headDone {
            // A zero-length input tells http-parser the stream ended: it completes a body
            // delimited by close, and refuses anything else.
            _ = http_parser_execute(parser, settings, nil, 0)
            if http_errno(rawValue: parser.pointee.http_errno) == HPE_PAUSED {
                http_parser_pause(parser, 0)
                pendingEnd = nil
                return .end(keepAlive: false)
            }
        }
        let e = WireError(
            .malformedRequest, status: 502,
            started
                ? "the upstream closed the connection before the response ended"
                : "the upstream closed the connection without a response")
        failed = e
        return .error(e)
    }

    /// Whether http-parser stopped on a byte of a field's name rather than its value: a
    /// colon on the line before the byte means a value. When the line began in an earlier
    /// input, ``lineHasColon`` says.
    private func invalidFieldInName(before end: Int, of input: UnsafeRawBufferPointer) -> Bool {
        !(Self.colonOnLastLine(input, before: end) ?? lineHasColon)
    }

    /// Whether the last line of `input[..<end]` holds a colon, or nil when no line ends in it.
    private static func colonOnLastLine(_ input: UnsafeRawBufferPointer, before end: Int) -> Bool? {
        var i = min(end, input.count) - 1
        while i >= 0 {
            if input[i] == 0x3A { return true }
            if input[i] == 0x0A { return false }
            i -= 1
        }
        return nil
    }

    private func fail(_ e: WireError, _ n: Int) -> (ResponseEvent, Int) {
        failed = e
        return (.error(e), n)
    }

    /// Calls `body` with the parser whose `data` is this object, without retaining it: it is
    /// alive for the whole `http_parser_execute` call, made from one of its own methods.
    private static func with(_ p: UnsafeMutablePointer<http_parser>?, _ body: (ResponseParser) -> Int32) -> Int32 {
        // Invariant: http-parser passes back the parser whose `data` holds this object.
        Unmanaged<ResponseParser>.fromOpaque(p!.pointee.data)._withUnsafeGuaranteedRef(body)
    }

    private static func headTooLarge(_ limits: HTTPLimits) -> WireError {
        WireError(.headTooLarge, status: 502, "the upstream response head exceeds \(limits.maxHeadBytes) bytes")
    }

    private func onMessageBegin() -> Int32 {
        fields.reset()
        fieldBytes = 0
        return 0
    }

    private func onField(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        if fields.inValue, let e = flushField() {
            violation = e
            return 1
        }
        fields.appendName(at, n)
        fieldBytes += n
        return checkHeadSize()
    }

    private func onValue(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        fields.appendValue(at, n)
        fieldBytes += n
        return checkHeadSize()
    }

    private func checkHeadSize() -> Int32 {
        if fieldBytes > limits.maxHeadBytes {
            violation = Self.headTooLarge(limits)
            return 1
        }
        return 0
    }

    /// Finishes a field; an invalid name or value, or one field too many, fails the response.
    private func flushField() -> WireError? {
        switch fields.finishField(maxCount: limits.maxHeaderCount) {
        case nil: return nil
        case .tooMany:
            return WireError(
                .tooManyHeaders, status: 502, "the upstream response has more than \(limits.maxHeaderCount) header fields")
        case .invalidName: return Self.invalidFieldName
        case .invalidValue: return Self.invalidFieldValue
        }
    }

    static let invalidFieldName = WireError(
        .invalidHeaderName, status: 502, "the upstream sent a header field whose name is not a token")
    static let invalidFieldValue = WireError(
        .invalidHeaderValue, status: 502, "the upstream sent a header field value with a character HTTP does not allow")

    private func onHeadersComplete() -> Int32 {
        if fields.hasUnfinishedField, let e = flushField() {
            violation = e
            return -1
        }
        let status = Int(parser.pointee.status_code)
        if (100..<200).contains(status) {
            // An interim response, read as a message without a body whatever its fields say.
            // A 101 with `Upgrade` and `Connection: upgrade` stops the parser after its head:
            // `parse` reports the switch when an upgrade was asked for, and refuses it otherwise.
            if status == 101 && parser.pointee.upgrade != 0 && upgradeExpected { switchedHead = fields.takeHeaders() }
            return 1
        }
        let headers = fields.takeHeaders()
        let framing: ResponseFraming
        do throws(WireError) {
            framing = try FramingRules.responseFraming(status: status, headers: headers, answersHEAD: noBody)
        } catch {
            violation = error
            return -1
        }
        // http-parser delimits the body itself: it must read the fields as the rules did.
        let chunked = parser.pointee.flags & F_CHUNKED.rawValue != 0
        let agrees =
            switch framing {
            case .none: true
            case .chunked: chunked
            case .length(let n): !chunked && parser.pointee.content_length == n
            case .untilClose: !chunked && parser.pointee.content_length == UInt64.max
            }
        guard agrees else {
            violation = WireError(.conflictingFraming, status: 502, "the upstream's framing fields are ambiguous")
            return -1
        }
        headDone = true
        reusable = framing != .none || FramingRules.reusableAfterBodiless(status: status, headers: headers)
        chunkScanner = framing == .chunked ? ChunkFramingScanner() : nil
        pendingHead = (status, headers)
        http_parser_pause(parser, 1)
        // 1 tells http-parser that no body follows.
        return framing == .none ? 1 : 0
    }

    private func onBody(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        pendingBody = UnsafeRawBufferPointer(start: UnsafeRawPointer(at), count: n)
        http_parser_pause(parser, 1)
        return 0
    }

    private func onMessageComplete() -> Int32 {
        guard headDone else {
            // The end of an interim response: the final one follows.
            headBytes = 0
            return 0
        }
        headDone = false
        pendingEnd = http_should_keep_alive(parser) != 0 && reusable
        http_parser_pause(parser, 1)
        return 0
    }

    private static func error(for e: http_errno) -> WireError {
        switch e {
        case HPE_HEADER_OVERFLOW:
            return WireError(.headTooLarge, status: 502, "the upstream response head is too large")
        case HPE_INVALID_CONTENT_LENGTH:
            return WireError(.invalidContentLength, status: 502, "the upstream's Content-Length is not a decimal number")
        case HPE_UNEXPECTED_CONTENT_LENGTH:
            return WireError(
                .conflictingFraming, status: 502, "the upstream sent Content-Length twice, or with Transfer-Encoding")
        case HPE_INVALID_TRANSFER_ENCODING:
            return WireError(.unsupportedTransferEncoding, status: 502, "the upstream's Transfer-Encoding is not supported")
        case HPE_INVALID_CHUNK_SIZE:
            return WireError(.invalidChunk, status: 502, "a chunk size line from the upstream is malformed")
        case HPE_INVALID_VERSION:
            return WireError(.unsupportedVersion, status: 502, "the upstream's HTTP version is malformed or unsupported")
        case HPE_LF_EXPECTED:
            return WireError(.bareCarriageReturn, status: 502, "a CR from the upstream is not followed by LF")
        default:
            return WireError(.malformedRequest, status: 502, "the upstream response is not valid HTTP/1.1")
        }
    }
}
