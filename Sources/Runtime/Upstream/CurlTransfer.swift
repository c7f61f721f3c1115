import CCurl
import Glibc
import HTTPWire

/// One exchange with an upstream through libcurl: an easy handle and its state. Loop-confined.
final class CurlTransfer: UpstreamTransfer {
    unowned let client: UpstreamClient
    /// The easy handle, from ``prepare()`` on.
    private(set) var easy: CurlEasy?
    private let request: UpstreamRequest
    private var handler: (any UpstreamResponseHandler)?
    private let headerList = CurlHeaderList()

    // Response.
    private var status = 0
    /// A `Transfer-Encoding` or `Content-Length` of the current head had a value that is not
    /// valid: dropped from the fields, while libcurl may frame the body by it.
    /// The first field of the head under way that is not valid HTTP: it refuses the response.
    private var invalidField: WireError?
    private var headers = HTTPHeaders()
    private var headDelivered = false
    private var finished = false

    // Upload.
    private var upload: [UInt8] = []
    private var uploadOffset = 0
    private var streamBody: BodyStream?
    private var chunkedUpload = false

    init(client: UpstreamClient, request: UpstreamRequest, handler: any UpstreamResponseHandler) {
        self.client = client
        self.request = request
        self.handler = handler
    }

    deinit {
        if let easy { client.recycle(easy) }
    }

    /// Whether the exchange has ended.
    public var isFinished: Bool { finished }

    /// Continues a transfer whose handler refused body bytes.
    public func resume() {
        guard !finished else { return }
        client.unpause(self)
    }

    /// Stops the exchange; the handler hears `reason` (default: cancelled).
    public func cancel(_ reason: RuntimeError) {
        guard !finished else { return }
        finish(reason)
        client.detach(self)
    }

    /// The transfer behind a libcurl callback's user pointer.
    private static func from(_ user: UnsafeMutableRawPointer?) -> CurlTransfer {
        // Invariant: libcurl passes back the pointer `prepare` registered (never nil), and
        // the client holds the transfer while its easy handle is in the multi handle.
        Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
    }

    /// Takes an easy handle and sets every option; throws an ``RuntimeError/Code/invalidRequest``
    /// error for a request that cannot be sent as it is, and the libcurl error when libcurl
    /// cannot make a handle.
    func prepare() throws(RuntimeError) -> CurlEasy {
        guard request.url.hasPrefix("http://") || request.url.hasPrefix("https://") else {
            throw .upstream(.invalidRequest, "the upstream URL must be http or https")
        }
        // libcurl sends each header line as given.
        try request.checkHeaderFields()
        let easy = try client.takeHandle()
        self.easy = easy
        do throws(RuntimeError) {
            try setOptions(easy)
        } catch {
            throw .upstream(.invalidRequest, "libcurl refused an option for this request", underlying: error)
        }
        return easy
    }

    private func setOptions(_ easy: CurlEasy) throws(RuntimeError) {
        let cfg = client.configuration
        let me = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(cfg.connectTimeout.milliseconds))
        if let total = cfg.totalTimeout { try easy.set(CURLOPT_TIMEOUT_MS, Int(total.milliseconds)) }
        // Idle: fewer than 1 byte/s for the idle time aborts.
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(cfg.idleTimeout.milliseconds / 1000)))
        try easy.set(CURLOPT_HTTP_VERSION, Int(cfg.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1))
        if let ca = cfg.caFile { try easy.set(CURLOPT_CAINFO, ca) }
        if let ca = cfg.caPath { try easy.set(CURLOPT_CAPATH, ca) }
        if let identity = request.clientIdentity {
            // By content, so that a renewed file is never shown over a connection made with
            // the old one (``TLSIdentityContents``).
            if let contents = TLSIdentityContents.shared.contents(of: identity) {
                try easy.set(CURLOPT_SSLCERT_BLOB, blob: contents.certificate)
                try easy.set(CURLOPT_SSLKEY_BLOB, blob: contents.key)
            } else {
                try easy.set(CURLOPT_SSLCERT, identity.certificateFile)
                try easy.set(CURLOPT_SSLKEY, identity.keyFile)
            }
        } else {
            if let cert = cfg.clientCertificate { try easy.set(CURLOPT_SSLCERT, cert) }
            if let key = cfg.clientKey { try easy.set(CURLOPT_SSLKEY, key) }
        }
        if let socket = cfg.unixSocketPath { try easy.set(CURLOPT_UNIX_SOCKET_PATH, socket) }
        try easy.setCloseSocket(UpstreamClient.closeSocketCallback, user: Unmanaged.passUnretained(client).toOpaque())
        try easy.set(
            CURLOPT_HEADERFUNCTION, { buf, size, n, user in CurlTransfer.from(user).onHeaderLine(buf, size * n) },
            CURLOPT_HEADERDATA, user: me)
        try easy.set(
            CURLOPT_WRITEFUNCTION, { buf, size, n, user in CurlTransfer.from(user).onBody(buf, size * n) },
            CURLOPT_WRITEDATA, user: me)
        let hasBody: Bool
        switch request.body {
        case .none:
            hasBody = false
        case .bytes(let b):
            hasBody = true
            upload = b
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(b.count))
        case .stream(let stream, let length):
            hasBody = true
            if let length {
                try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(length))
            } else {
                // libcurl sends a body of unknown length chunked (HTTP/1.1) only when asked to.
                chunkedUpload = true
            }
            streamBody = stream
        }
        switch (request.method, hasBody) {
        case ("GET", false):
            try easy.set(CURLOPT_HTTPGET, 1)
        case ("HEAD", _):
            try easy.set(CURLOPT_NOBODY, 1)
        case (_, true), ("POST", false):
            try easy.set(CURLOPT_POST, 1)
            if !hasBody { try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: 0) }
            try easy.set(
                CURLOPT_READFUNCTION, { buf, size, n, user in CurlTransfer.from(user).onRead(buf, size * n) },
                CURLOPT_READDATA, user: me)
            if request.method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, request.method) }
        default:
            try easy.set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        // Appended one by one, with no intermediate array: this runs for every request.
        for field in request.headers.fields {
            var line = field.name
            line += ": "
            line += field.value
            try headerList.append(line)
        }
        // libcurl adds Accept and Expect on its own; an empty value suppresses each.
        if !request.headers.contains("Accept") { try headerList.append("Accept:") }
        try headerList.append("Expect:")
        if chunkedUpload { try headerList.append("Transfer-Encoding: chunked") }
        try easy.set(CURLOPT_HTTPHEADER, headerList)
    }

    // MARK: Callbacks from libcurl

    private func onHeaderLine(_ buf: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        // Works on the bytes: one header line arrives per call, and strings are made only
        // for the name and the value that are kept.
        let raw = UnsafeRawBufferPointer(start: buf, count: count)
        var end = raw.count
        while end > 0 && (raw[end - 1] == 0x0D || raw[end - 1] == 0x0A) { end -= 1 }
        let line = raw[0..<end]
        if line.starts(with: Self.httpSlash) {
            // A status line: a new response (after 1xx) starts.
            status = Self.statusCode(line)
            headers = HTTPHeaders()
            invalidField = nil
            return count
        }
        guard let first = line.first else {
            if status >= 200 && !headDelivered {
                // The same strict framing as the loop's own client: libcurl reads a body
                // whose framing fields disagree in its own way, and the client would be told
                // the fields (RFC 9112 §6.3). Returning less than `count` ends the transfer.
                do throws(WireError) {
                    if let invalidField { throw invalidField }
                    _ = try FramingRules.responseFraming(status: status, headers: headers, answersHEAD: request.method == "HEAD")
                } catch {
                    finish(.upstream(.invalidResponse, "the upstream answer is not valid HTTP: \(error.detail)"))
                    return 0
                }
                headDelivered = true
                handler?.upstreamHead(status: status, headers: headers)
            }
            return count
        }
        if first == 0x20 || first == 0x09 {
            // obs-fold from the upstream: join to the previous value.
            if var last = headers.fields.last {
                last.value += " " + FramingRules.trimOWS(String(decoding: line, as: UTF8.self))
                var fields = headers.fields
                fields[fields.count - 1] = last
                headers = HTTPHeaders(fields)
            }
            return count
        }
        guard let colon = line.firstIndex(of: 0x3A) else {
            if !headDelivered { invalidField = Self.invalidFieldName }
            return count
        }
        let nameBytes = UnsafeRawBufferPointer(rebasing: raw[..<colon])
        var lo = colon + 1
        var hi = end
        while lo < hi && (raw[lo] == 0x20 || raw[lo] == 0x09) { lo += 1 }
        while hi > lo && (raw[hi - 1] == 0x20 || raw[hi - 1] == 0x09) { hi -= 1 }
        let valueBytes = UnsafeRawBufferPointer(rebasing: raw[lo..<hi])
        // The loop's client refuses a response with an invalid field (``ResponseParser``);
        // libcurl passes it on, so the same rule is applied here. Fields after the head are
        // trailers, which are not passed on.
        if !FramingRules.isValidFieldName(nameBytes) {
            if !headDelivered { invalidField = Self.invalidFieldName }
        } else if !FramingRules.isValidFieldValue(valueBytes) {
            if !headDelivered { invalidField = Self.invalidFieldValue }
        } else {
            headers.add(name: String(decoding: nameBytes, as: UTF8.self), value: String(decoding: valueBytes, as: UTF8.self))
        }
        return count
    }

    private static let httpSlash: [UInt8] = Array("HTTP/".utf8)
    private static let invalidFieldName = WireError(
        .invalidHeaderName, status: 502, "the upstream sent a header field whose name is not a token")
    private static let invalidFieldValue = WireError(
        .invalidHeaderValue, status: 502, "the upstream sent a header field value with a character HTTP does not allow")

    /// The three-digit code after the first space of a status line, or 0.
    static func statusCode(_ line: Slice<UnsafeRawBufferPointer>) -> Int {
        guard let space = line.firstIndex(of: 0x20) else { return 0 }
        var code = 0
        var digits = 0
        var i = space + 1
        while i < line.endIndex, (0x30...0x39).contains(line[i]) {
            code = code * 10 + Int(line[i] - 0x30)
            digits += 1
            i += 1
        }
        return digits == 3 && (i == line.endIndex || line[i] == 0x20) ? code : 0
    }

    private func onBody(_ buf: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        // A cancelled transfer takes nothing more: returning less than `count` makes
        // libcurl end it (CURLE_WRITE_ERROR) until the client takes it out.
        if finished { return 0 }
        if !headDelivered {
            headDelivered = true
            handler?.upstreamHead(status: status, headers: headers)
        }
        guard let handler else { return count }
        let accepted = handler.upstreamBody(UnsafeRawBufferPointer(start: buf, count: count))
        return accepted ? count : ag_writefunc_pause()
    }

    private func onRead(_ buf: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
        guard let buf, !finished else { return ag_readfunc_abort() }
        if let stream = streamBody {
            switch stream.readNow(into: UnsafeMutableRawBufferPointer(start: buf, count: capacity)) {
            case .bytes(let n): return n
            case .end: return 0
            case .failed: return ag_readfunc_abort()
            case .empty:
                // Unpause on a later loop turn, never from inside the stream's own call.
                stream.notifyWhenReadable { [weak self] in
                    guard let self else { return }
                    let bound = LoopBound(self, loop: self.client.loop)
                    self.client.loop.execute { bound.value.resume() }
                }
                return ag_readfunc_pause()
            }
        }
        let available = upload.count - uploadOffset
        if available == 0 { return 0 }
        let n = min(available, capacity)
        upload.withUnsafeBytes { src in
            UnsafeMutableRawPointer(buf).copyMemory(from: src.baseAddress! + uploadOffset, byteCount: n)
        }
        uploadOffset += n
        return n
    }

    // MARK: Completion

    func complete(_ code: CURLcode) {
        if code == CURLE_OK {
            if !headDelivered {
                finish(.upstream(.invalidResponse, "the upstream sent no response"))
            } else {
                finish(nil)
            }
            return
        }
        finish(CurlTransfer.classify(code))
    }

    func fail(_ error: RuntimeError) { finish(error) }

    func finish(_ error: RuntimeError?) {
        guard !finished else { return }
        finished = true
        let h = handler
        handler = nil
        h?.upstreamFinished(error)
    }

    static func classify(_ code: CURLcode) -> RuntimeError {
        let text = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .upstream(.timeout, "the upstream did not answer in time", curlCode: Int32(code.rawValue))
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST:
            return .upstream(.connectFailed, "could not connect to the upstream: \(text)", curlCode: Int32(code.rawValue))
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return .upstream(.connectionReset, "the upstream connection failed: \(text)", curlCode: Int32(code.rawValue))
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR:
            return .upstream(.tls, "TLS with the upstream failed: \(text)", curlCode: Int32(code.rawValue))
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_CONTENT_ENCODING:
            return .upstream(.invalidResponse, "the upstream answer is not valid HTTP: \(text)", curlCode: Int32(code.rawValue))
        default:
            return .upstream(.upstreamFailed, "the upstream exchange failed: \(text)", curlCode: Int32(code.rawValue))
        }
    }
}
