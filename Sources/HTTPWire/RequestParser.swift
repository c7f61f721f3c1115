private import CHTTPParser

/// One step of reading a request stream.
public enum ParseEvent {
    /// All input was consumed; feed more.
    case needMoreData
    /// A request head was read and validated.
    case head(RequestHead)
    /// Body bytes; the buffer points into the input given to `parse`.
    case body(UnsafeRawBufferPointer)
    /// The current request's body ended. Parsing stops here until `parse` is called again.
    case end
    /// The request is malformed; answer with the error and close.
    case error(WireError)
}

/// A pull-style HTTP/1.1 request reader over Debian's http-parser, with the strictness
/// a proxy needs added on top (see ``FramingRules``).
///
/// `parse` reads until something happens and returns it with the number of bytes it
/// consumed; call it again with the rest. It is not thread-safe: one connection owns one.
///
/// ```swift
/// var offset = 0
/// while offset < bytes.count {
///     let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
///     offset += used
///     // handle event
/// }
/// ```
public final class RequestParser {
    private let parser: UnsafeMutablePointer<http_parser>
    private let settings: UnsafeMutablePointer<http_parser_settings>
    private let limits: HTTPLimits

    // Head being assembled.
    private var target: [UInt8] = []
    private var fields = HeaderFieldAccumulator()
    private var headBytes = 0
    private var headDone = false
    /// Whether the head just finished had `Transfer-Encoding` (its fields left with it).
    private var headHadTransferEncoding = false
    private var scanner = HeadScanner()
    /// The strictness http-parser lacks in chunked bodies; nil unless the body is chunked.
    /// Kept past the end of the message (its last bytes are scanned after http-parser
    /// called back) and replaced at the next head.
    private var chunkScanner: ChunkFramingScanner?
    /// The method so far, after http-parser refused it (see ``readUnknownMethod``).
    private var unknownMethod: [UInt8]?
    private var violation: WireError?

    // Signals from callbacks to `parse`.
    private var pendingHead = false
    private var pendingBody: UnsafeRawBufferPointer?
    private var pendingEnd = false
    private var failed: WireError?

    /// Creates a parser with the given limits.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
        parser = .allocate(capacity: 1)
        settings = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        http_parser_settings_init(settings)
        settings.pointee.on_message_begin = { p in RequestParser.with(p) { $0.onMessageBegin() } }
        settings.pointee.on_url = { p, at, n in RequestParser.with(p) { $0.onURL(at, n) } }
        settings.pointee.on_header_field = { p, at, n in RequestParser.with(p) { $0.onField(at, n) } }
        settings.pointee.on_header_value = { p, at, n in RequestParser.with(p) { $0.onValue(at, n) } }
        settings.pointee.on_headers_complete = { p in RequestParser.with(p) { $0.onHeadersComplete() } }
        settings.pointee.on_body = { p, at, n in RequestParser.with(p) { $0.onBody(at, n) } }
        settings.pointee.on_message_complete = { p in RequestParser.with(p) { $0.onMessageComplete() } }
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        parser.deallocate()
        settings.deallocate()
    }

    /// Whether a request head has been read and its body is not finished yet.
    public var inBody: Bool { headDone }

    /// Whether the parser is between requests (nothing of the next one read yet).
    public var atMessageBoundary: Bool { !headDone && headBytes == 0 }

    /// Reads from `input` until an event; returns it and the bytes consumed.
    public func parse(_ input: UnsafeRawBufferPointer) -> (ParseEvent, Int) {
        if let failed { return (.error(failed), 0) }
        guard let base = input.baseAddress, input.count > 0 else { return (.needMoreData, 0) }
        if unknownMethod != nil { return readUnknownMethod(input, consumed: 0) }
        let scanningHead = !headDone
        let n = http_parser_execute(parser, settings, base.assumingMemoryBound(to: CChar.self), input.count)
        fields.detach()
        if scanningHead {
            // Bytes of the head: check what http-parser tolerates but a proxy must not.
            let scanned = UnsafeRawBufferPointer(rebasing: input[0..<n])
            if let e = scanner.scan(scanned) { return fail(e, n) }
            headBytes += n
        } else if chunkScanner != nil, let e = chunkScanner!.scan(UnsafeRawBufferPointer(rebasing: input[0..<n])) {
            return fail(e, n)
        }
        let errno = http_errno(rawValue: parser.pointee.http_errno)
        if errno == HPE_PAUSED {
            http_parser_pause(parser, 0)
            if pendingHead {
                pendingHead = false
                do throws(WireError) {
                    var head = try finishHead()
                    if head.method == "CONNECT" {
                        throw WireError(.upgradeUnsupported, status: 501, "CONNECT is not supported")
                    }
                    if parser.pointee.upgrade != 0 {
                        // http-parser saw `Upgrade` with `Connection: upgrade`. A bodyless GET
                        // over HTTP/1.1 may be passed on (``RequestHead/upgrade``): if it is
                        // not switched, the connection goes on as HTTP/1.1. Any other upgrade
                        // is ignored (RFC 9110 §7.8) and the connection closes after the response.
                        head.upgrade = Self.passableUpgrade(head)
                        if head.upgrade == nil { head.keepAlive = false }
                    }
                    // http-parser calls back at the end of a head while it stands on the head's
                    // last byte, and consumes that byte when parsing goes on without looking
                    // at it (any byte ends a head there, even one after a lone CR): the
                    // scanner sees it now, before the head is given out.
                    if n < input.count, let e = scanner.scan(UnsafeRawBufferPointer(rebasing: input[n..<n + 1])) {
                        return fail(e, n)
                    }
                    return (.head(head), n)
                } catch {
                    return fail(error, n)
                }
            }
            if let body = pendingBody {
                pendingBody = nil
                return (.body(body), n)
            }
            if pendingEnd {
                pendingEnd = false
                return (.end, n)
            }
            return (.needMoreData, n)
        }
        if errno == HPE_INVALID_METHOD && violation == nil {
            unknownMethod = scanner.firstLineSoFar
            // http-parser stopped before the byte it refused: a CR just before it (blank
            // lines may precede a request) must be followed by LF, as anywhere in a head.
            if n < input.count, let e = scanner.scan(UnsafeRawBufferPointer(rebasing: input[n..<n + 1])) {
                return fail(e, n)
            }
            return readUnknownMethod(UnsafeRawBufferPointer(rebasing: input[n...]), consumed: n)
        }
        if errno != HPE_OK {
            return fail(violation ?? mapError(errno), n)
        }
        if !headDone && headBytes > limits.maxHeadBytes {
            return fail(WireError(.headTooLarge, status: 431, "the request head exceeds \(limits.maxHeadBytes) bytes"), n)
        }
        return (.needMoreData, n)
    }

    /// The `Upgrade` value of an upgrade request a proxy may pass on, else nil: WebSocket
    /// only (RFC 6455). Any other protocol (`h2c`, a private one) would open a tunnel the
    /// proxy cannot look into, past the route's prefix and path checks: it is ignored.
    static func passableUpgrade(_ head: RequestHead) -> String? {
        guard head.method == "GET", head.major == 1, head.minor == 1, head.framing == .none,
            head.headers[all: "upgrade"].count == 1, let value = head.headers[first: "upgrade"],
            FramingRules.trimOWS(value).caseInsensitiveEquals("websocket"),
            FramingRules.connectionTokenList(head.headers).contains("upgrade")
        else { return nil }
        return value
    }

    private func fail(_ e: WireError, _ n: Int) -> (ParseEvent, Int) {
        failed = e
        return (.error(e), n)
    }

    /// Calls `body` with the parser whose `data` is this object, without retaining it: it is
    /// alive for the whole `http_parser_execute` call, made from one of its own methods.
    private static func with(_ p: UnsafeMutablePointer<http_parser>?, _ body: (RequestParser) -> Int32) -> Int32 {
        // Invariant: http-parser passes back the parser whose `data` holds this object.
        Unmanaged<RequestParser>.fromOpaque(p!.pointee.data)._withUnsafeGuaranteedRef(body)
    }

    private func onMessageBegin() -> Int32 {
        target.removeAll(keepingCapacity: true)
        fields.reset()
        headHadTransferEncoding = false
        violation = nil
        return 0
    }

    private func onURL(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        if target.count + n > limits.maxTargetBytes {
            violation = WireError(.targetTooLong, status: 414, "the request target exceeds \(limits.maxTargetBytes) bytes")
            return 1
        }
        append(&target, at, n)
        return checkHeadSize()
    }

    private func onField(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        if fields.inValue {
            if let e = flushField() {
                violation = e
                return 1
            }
        }
        fields.appendName(at, n)
        return checkHeadSize()
    }

    private func onValue(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        fields.appendValue(at, n)
        return checkHeadSize()
    }

    private func checkHeadSize() -> Int32 {
        if headBytes + target.count + fields.unfinishedBytes > limits.maxHeadBytes + 4096 {
            violation = WireError(.headTooLarge, status: 431, "the request head exceeds \(limits.maxHeadBytes) bytes")
            return 1
        }
        return 0
    }

    private func flushField() -> WireError? {
        switch fields.finishField(maxCount: limits.maxHeaderCount) {
        case nil: nil
        case .invalidName:
            WireError(.invalidHeaderName, status: 400, "a header field name contains a character outside RFC 9110 tchar")
        case .invalidValue: WireError(.invalidHeaderValue, status: 400, "a header field value contains a control character")
        case .tooMany: WireError(.tooManyHeaders, status: 431, "more than \(limits.maxHeaderCount) header fields")
        }
    }

    private func onHeadersComplete() -> Int32 {
        if fields.hasUnfinishedField {
            if let e = flushField() {
                violation = e
                return -1
            }
        }
        pendingHead = true
        http_parser_pause(parser, 1)
        return 0
    }

    private func finishHead() throws(WireError) -> RequestHead {
        headDone = true
        if headBytes > limits.maxHeadBytes {
            throw WireError(.headTooLarge, status: 431, "the request head exceeds \(limits.maxHeadBytes) bytes")
        }
        let major = Int(parser.pointee.http_major)
        let minor = Int(parser.pointee.http_minor)
        try FramingRules.checkVersion(major: major, minor: minor)
        // Handed over, not copied: the parser keeps no reference, so the request's is the
        // only one and its storage can go back to the thread's spares when the request is
        // answered (``HTTPHeaders/recycle()``).
        let headers = fields.takeHeaders()
        headHadTransferEncoding = headers.contains("transfer-encoding")
        try FramingRules.checkHost(headers: headers, major: major, minor: minor)
        let framing = try FramingRules.requestFraming(headers: headers, major: major, minor: minor)
        chunkScanner = framing == .chunked ? ChunkFramingScanner() : nil
        let expects = try FramingRules.expectsContinue(headers: headers, major: major, minor: minor)
        let method = Self.methodName(http_method(rawValue: UInt32(parser.pointee.method)))
        guard !target.isEmpty, FramingRules.isValidFieldValue(target), !target.contains(0x20) else {
            throw WireError(.invalidTarget, status: 400, "the request target is not valid")
        }
        // method SP target SP HTTP/d.d, one space each (RFC 9112 §3): http-parser lets runs
        // of spaces through, which another server on the way may read differently.
        guard scanner.firstLineLength == method.utf8.count + target.count + 10 else {
            throw WireError(
                .malformedRequest, status: 400, "the request line must be method, target and version, one space apart")
        }
        return RequestHead(
            method: method, target: String(decoding: target, as: UTF8.self), major: major, minor: minor,
            headers: headers, framing: framing, expectsContinue: expects && framing != .none,
            keepAlive: FramingRules.keepAlive(headers: headers, major: major, minor: minor))
    }

    /// The name of a method http-parser read: a literal for the common ones (no string is
    /// made or checked per request), http-parser's own name for the rest.
    private static func methodName(_ method: http_method) -> String {
        switch method {
        case HTTP_GET: "GET"
        case HTTP_POST: "POST"
        case HTTP_PUT: "PUT"
        case HTTP_DELETE: "DELETE"
        case HTTP_HEAD: "HEAD"
        case HTTP_PATCH: "PATCH"
        case HTTP_OPTIONS: "OPTIONS"
        default: String(cString: http_method_str(method))
        }
    }

    private func onBody(_ at: UnsafePointer<CChar>?, _ n: Int) -> Int32 {
        pendingBody = UnsafeRawBufferPointer(start: UnsafeRawPointer(at), count: n)
        http_parser_pause(parser, 1)
        return 0
    }

    private func onMessageComplete() -> Int32 {
        headDone = false
        headBytes = 0
        scanner.reset()
        pendingEnd = true
        http_parser_pause(parser, 1)
        return 0
    }

    private func append(_ buffer: inout [UInt8], _ at: UnsafePointer<CChar>?, _ n: Int) {
        guard let at, n > 0 else { return }
        at.withMemoryRebound(to: UInt8.self, capacity: n) { buffer.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
    }

    /// http-parser knows a fixed list of methods and stops at the first byte that leaves it.
    /// A well-formed method it does not know is 501 (RFC 9110 §9.1); anything else there is
    /// a malformed request line (400). To tell them apart the method is read on, from the
    /// request-line bytes already scanned, until its space; however the input is split, the
    /// answer is the same.
    private func readUnknownMethod(_ bytes: UnsafeRawBufferPointer, consumed: Int) -> (ParseEvent, Int) {
        let invalid = WireError(.invalidMethod, status: 400, "the request method is not recognised")
        guard var method = unknownMethod, method.allSatisfy(FramingRules.isTokenByte) else {
            return fail(invalid, consumed)
        }
        for (i, b) in bytes.enumerated() {
            if b == 0x20 && !method.isEmpty {
                let name = String(decoding: method, as: UTF8.self)
                return fail(
                    WireError(.methodNotImplemented, status: 501, "the method \(name) is not implemented"), consumed + i + 1)
            }
            guard FramingRules.isTokenByte(b), method.count < Self.longestUnknownMethod else {
                return fail(invalid, consumed + i + 1)
            }
            method.append(b)
        }
        unknownMethod = method
        return (.needMoreData, consumed + bytes.count)
    }

    /// Longer methods are refused as malformed rather than named.
    static let longestUnknownMethod = 20

    private func mapError(_ e: http_errno) -> WireError {
        Self.error(
            forErrno: e.rawValue, limits: limits,
            sawTransferEncoding: headHadTransferEncoding || fields.headers.contains("transfer-encoding")
                || fields.unfinishedNameIs("transfer-encoding"))
    }
}
