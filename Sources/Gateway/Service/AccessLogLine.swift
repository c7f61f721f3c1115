import Glibc

/// Builds access log lines, each into the same buffer: one per thread
/// (``forThisThread()``), so a line costs no allocation once the buffer has grown, and the
/// texts of the current second are formatted once (``SecondText``).
///
/// The line is byte for byte what ``JSONLogHandler`` writes for the ``AccessLogRecord`` of
/// the same facts given as metadata (`AccessLogLineTests`): `ts`, `level`, `logger`, `msg`,
/// then the record's members in name order.
final class AccessLogLine {
    /// What one line says about a request; ``AccessFacts`` fills it in as the request is served.
    struct Fields: Sendable {
        var method: String
        /// The request target; the line shows its path, and its query with `includeQuery`.
        var target: String
        var route: String?
        var bytesIn: Int?
        var traceparent: String?
        /// When the request arrived (the record's `time`).
        var arrival: WallTime
        var status = 0
        var upstreamStatus: Int?
        var bytesOut = 0
        var replays = 0
        var generation: UInt64?
    }

    /// The last line built; valid until the next.
    private(set) var bytes: [UInt8] = []
    private let buffer = AccessLogBuffer()
    private var ts = SecondText()
    private var time = SecondText()

    init() {
        bytes.reserveCapacity(512)
    }

    /// Builds the line of `fields` written at `now`, `nanoseconds` after arrival, into
    /// ``bytes``. `header` is what follows `ts`'s value up to the members
    /// (`","level":"info","logger":"authgate.access","msg":"access"`).
    func build(_ fields: Fields, nanoseconds: Int64, now: WallTime, header: [UInt8], includeQuery: Bool) {
        let line = buffer
        line.removeAll()
        line.append(#"{"ts":""#)
        ts.append(now, milliseconds: false, to: line)
        header.withUnsafeBufferPointer { line.append($0) }
        if let n = fields.bytesIn {
            line.append(#","bytesIn":"#)
            line.appendDecimal(n)
        }
        line.append(#","bytesOut":"#)
        line.appendDecimal(fields.bytesOut)
        line.append(#","durationMs":"#)
        AccessLogText.appendMilliseconds(nanoseconds: nanoseconds, to: line)
        line.append(#","method":"#)
        AccessLogText.appendQuoted(fields.method, to: line)
        var target = fields.target
        let query = target.withUTF8 { t -> String? in
            // Never an absolute-form target's authority (it can hold a password) nor a fragment.
            let (path, query) = AccessLogTarget.parts(t)
            line.append(#","path":"#)
            if path.isEmpty {
                line.append(#""/""#)
            } else {
                AccessLogText.appendQuoted(UnsafeBufferPointer(rebasing: t[path]), to: line)
            }
            guard includeQuery, let query else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: t[query]), as: UTF8.self)
        }
        if let query {
            line.append(#","query":"#)
            AccessLogText.appendQuoted(AccessLogRecord.redacted(query), to: line)
        }
        line.append(#","replayed":"#)
        line.appendDecimal(fields.replays)
        if let route = fields.route {
            line.append(#","route":"#)
            AccessLogText.appendQuoted(route, to: line)
        }
        line.append(#","status":"#)
        line.appendDecimal(fields.status)
        line.append(#","time":""#)
        time.append(fields.arrival, milliseconds: true, to: line)
        line.append(0x22)
        if let g = fields.generation {
            line.append(#","tokenGeneration":"#)
            line.appendDecimal(g)
        }
        if let t = fields.traceparent { AccessLogText.appendTraceID(t, to: line) }
        if let s = fields.upstreamStatus {
            line.append(#","upstreamStatus":"#)
            line.appendDecimal(s)
        }
        line.append("}\n" as StaticString)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: line.bytes)
    }

    /// This thread's builder, made on first use and released when the thread ends.
    static func forThisThread() -> AccessLogLine {
        if let p = pthread_getspecific(key) { return Unmanaged<AccessLogLine>.fromOpaque(p).takeUnretainedValue() }
        let line = AccessLogLine()
        let rc = pthread_setspecific(key, Unmanaged.passRetained(line).toOpaque())
        // Without a slot (out of memory) the line is this call's alone.
        if rc != 0 { Unmanaged.passUnretained(line).release() }
        return line
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { p in
            if let p { Unmanaged<AccessLogLine>.fromOpaque(p).release() }
        }
        precondition(rc == 0, "pthread_key_create failed: \(rc)")
        return key
    }()
}
