import CCurl
import Glibc
import HTTPWire

/// One exchange with an upstream: a libcurl easy handle and its state. Loop-confined.
public final class UpstreamTransfer {
    unowned let client: UpstreamClient
    let easy: UnsafeMutableRawPointer
    private let request: UpstreamRequest
    private var handler: (any UpstreamResponseHandler)?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var url: [CChar] = []
    private var method: [CChar] = []

    // Response.
    private var status = 0
    private var headers = HTTPHeaders()
    private var headDelivered = false
    private var finished = false
    private var cancelReason: UpstreamError?

    // Upload.
    private var upload: [UInt8] = []
    private var uploadOffset = 0
    private var streamBody: BodyStream?
    private var chunkedUpload = false

    init(client: UpstreamClient, request: UpstreamRequest, handler: any UpstreamResponseHandler) {
        self.client = client
        self.request = request
        self.handler = handler
        self.easy = client.takeHandle()
    }

    deinit {
        client.recycle(easy)
        curl_slist_free_all(headerList)
    }

    /// Whether the exchange has ended.
    public var isFinished: Bool { finished }

    /// Continues a transfer whose handler refused body bytes.
    public func resume() {
        guard !finished else { return }
        client.unpause(self)
    }

    /// Stops the exchange; the handler hears `reason` (default: cancelled).
    public func cancel(_ reason: UpstreamError = UpstreamError(.cancelled, "the exchange was cancelled")) {
        guard !finished else { return }
        client.detach(self)
        finish(reason)
    }

    /// Sets every option; returns an error for a request libcurl cannot make.
    func prepare() -> UpstreamError? {
        let cfg = client.configuration
        guard request.url.hasPrefix("http://") || request.url.hasPrefix("https://") else {
            return UpstreamError(.invalidRequest, "the upstream URL must be http or https")
        }
        url = Array(request.url.utf8CString)
        let me = Unmanaged.passUnretained(self).toOpaque()
        var ok = true
        func check(_ rc: CURLcode) { if rc != CURLE_OK { ok = false } }
        check(ag_easy_setopt_pointer(easy, CURLOPT_PRIVATE, me))
        check(ag_easy_setopt_string(easy, CURLOPT_URL, url))
        check(ag_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        check(ag_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        check(ag_easy_setopt_long(easy, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)))
        check(ag_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(cfg.connectTimeout.milliseconds)))
        if let total = cfg.totalTimeout { check(ag_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(total.milliseconds))) }
        // Idle: fewer than 1 byte/s for the idle time aborts.
        check(ag_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1))
        check(ag_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, Int(cfg.idleTimeout.milliseconds / 1000))))
        check(ag_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(cfg.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1)))
        if let ca = cfg.caFile { check(ag_easy_setopt_string(easy, CURLOPT_CAINFO, ca)) }
        if let ca = cfg.caPath { check(ag_easy_setopt_string(easy, CURLOPT_CAPATH, ca)) }
        if let cert = cfg.clientCertificate { check(ag_easy_setopt_string(easy, CURLOPT_SSLCERT, cert)) }
        if let key = cfg.clientKey { check(ag_easy_setopt_string(easy, CURLOPT_SSLKEY, key)) }
        if let socket = cfg.unixSocketPath { check(ag_easy_setopt_string(easy, CURLOPT_UNIX_SOCKET_PATH, socket)) }
        check(ag_easy_setopt_pointer(easy, CURLOPT_CLOSESOCKETDATA, Unmanaged.passUnretained(client).toOpaque()))
        check(ag_easy_setopt_closesocket_callback(easy, UpstreamClient.closeSocketCallback))
        check(ag_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me))
        check(ag_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { buf, size, n, user in
            Unmanaged<UpstreamTransfer>.fromOpaque(user!).takeUnretainedValue().onHeaderLine(buf!, size * n)
        })
        check(ag_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me))
        check(ag_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { buf, size, n, user in
            Unmanaged<UpstreamTransfer>.fromOpaque(user!).takeUnretainedValue().onBody(buf!, size * n)
        })
        let hasBody: Bool
        switch request.body {
        case .none:
            hasBody = false
        case .bytes(let b):
            hasBody = true
            upload = b
            check(ag_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(b.count)))
        case .stream(let stream, let length):
            hasBody = true
            if let length {
                check(ag_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(length)))
            } else {
                // libcurl sends a body of unknown length chunked (HTTP/1.1) only when asked to.
                chunkedUpload = true
            }
            streamBody = stream
        }
        switch (request.method, hasBody) {
        case ("GET", false):
            check(ag_easy_setopt_long(easy, CURLOPT_HTTPGET, 1))
        case ("HEAD", _):
            check(ag_easy_setopt_long(easy, CURLOPT_NOBODY, 1))
        case (_, true), ("POST", false):
            check(ag_easy_setopt_long(easy, CURLOPT_POST, 1))
            if !hasBody { check(ag_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, 0)) }
            check(ag_easy_setopt_pointer(easy, CURLOPT_READDATA, me))
            check(ag_easy_setopt_data_callback(easy, CURLOPT_READFUNCTION) { buf, size, n, user in
                Unmanaged<UpstreamTransfer>.fromOpaque(user!).takeUnretainedValue().onRead(buf!, size * n)
            })
            if request.method != "POST" { setMethod(request.method, &ok) }
        default:
            setMethod(request.method, &ok)
        }
        // The last line against header injection: libcurl sends each line as given, so a
        // value with CR or LF would start a header (or a request) of its own.
        for field in request.headers.fields {
            guard FramingRules.isValidFieldName(field.name.utf8) else {
                return UpstreamError(.invalidRequest, "a request header name is not an HTTP token; nothing was sent")
            }
            guard FramingRules.isValidFieldValue(field.value.utf8) else {
                return UpstreamError(
                    .invalidRequest, "the value of the request header \(field.name) contains a control character; nothing was sent")
            }
        }
        // Appended one by one, with no intermediate array: this runs for every request.
        func append(_ line: String) -> Bool {
            guard let appended = curl_slist_append(headerList, line) else { return false }
            headerList = appended
            return true
        }
        var appended = true
        for field in request.headers.fields {
            var line = field.name
            line += ": "
            line += field.value
            appended = appended && append(line)
        }
        // libcurl adds Accept and Expect on its own; an empty value suppresses each.
        if !request.headers.contains("Accept") { appended = appended && append("Accept:") }
        appended = appended && append("Expect:")
        if chunkedUpload { appended = appended && append("Transfer-Encoding: chunked") }
        guard appended else { return UpstreamError(.other, "curl_slist_append failed (out of memory)") }
        check(ag_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList))
        return ok ? nil : UpstreamError(.invalidRequest, "libcurl refused an option for this request")
    }

    private func setMethod(_ m: String, _ ok: inout Bool) {
        method = Array(m.utf8CString)
        if ag_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK { ok = false }
    }

    // MARK: Callbacks from libcurl

    private func onHeaderLine(_ buf: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
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
            return count
        }
        guard let first = line.first else {
            if status >= 200 && !headDelivered {
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
        guard let colon = line.firstIndex(of: 0x3A) else { return count }
        let nameBytes = UnsafeRawBufferPointer(rebasing: raw[..<colon])
        var lo = colon + 1
        var hi = end
        while lo < hi && (raw[lo] == 0x20 || raw[lo] == 0x09) { lo += 1 }
        while hi > lo && (raw[hi - 1] == 0x20 || raw[hi - 1] == 0x09) { hi -= 1 }
        let valueBytes = UnsafeRawBufferPointer(rebasing: raw[lo..<hi])
        if FramingRules.isValidFieldName(nameBytes) && FramingRules.isValidFieldValue(valueBytes) {
            headers.add(name: String(decoding: nameBytes, as: UTF8.self), value: String(decoding: valueBytes, as: UTF8.self))
        }
        return count
    }

    private static let httpSlash: [UInt8] = Array("HTTP/".utf8)

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

    private func onBody(_ buf: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        if !headDelivered {
            headDelivered = true
            handler?.upstreamHead(status: status, headers: headers)
        }
        guard let handler else { return count }
        let accepted = handler.upstreamBody(UnsafeRawBufferPointer(start: buf, count: count))
        return accepted ? count : ag_writefunc_pause()
    }

    private func onRead(_ buf: UnsafeMutablePointer<CChar>, _ capacity: Int) -> Int {
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
                finish(UpstreamError(.invalidResponse, "the upstream sent no response"))
            } else {
                finish(nil)
            }
            return
        }
        finish(UpstreamTransfer.classify(code))
    }

    func fail(_ error: UpstreamError) { finish(error) }

    func finish(_ error: UpstreamError?) {
        guard !finished else { return }
        finished = true
        let h = handler
        handler = nil
        h?.upstreamFinished(error)
    }

    static func classify(_ code: CURLcode) -> UpstreamError {
        let text = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return UpstreamError(.timeout, curlCode: Int32(code.rawValue), "the upstream did not answer in time")
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST:
            return UpstreamError(.connectFailed, curlCode: Int32(code.rawValue), "could not connect to the upstream: \(text)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return UpstreamError(.connectionReset, curlCode: Int32(code.rawValue), "the upstream connection failed: \(text)")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR:
            return UpstreamError(.tls, curlCode: Int32(code.rawValue), "TLS with the upstream failed: \(text)")
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_CONTENT_ENCODING:
            return UpstreamError(.invalidResponse, curlCode: Int32(code.rawValue), "the upstream answer is not valid HTTP: \(text)")
        default:
            return UpstreamError(.other, curlCode: Int32(code.rawValue), "the upstream exchange failed: \(text)")
        }
    }
}

