import Glibc
import HTTPWire

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
    private var ts = SecondText()
    private var time = SecondText()

    init() {
        bytes.reserveCapacity(512)
    }

    /// Builds the line of `fields` written at `now`, `duration` after arrival, into
    /// ``bytes``. `header` is what follows `ts`'s value up to the members
    /// (`","level":"info","logger":"authgate.access","msg":"access"`).
    func build(
        _ fields: Fields, duration: Duration, now: WallTime, header: [UInt8], includeQuery: Bool
    ) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: AccessLogText.bytes(#"{"ts":""#))
        ts.append(now, milliseconds: false, to: &bytes)
        bytes.append(contentsOf: header)
        if let n = fields.bytesIn { number(#","bytesIn":"#, n) }
        number(#","bytesOut":"#, fields.bytesOut)
        bytes.append(contentsOf: AccessLogText.bytes(#","durationMs":"#))
        AccessLogText.appendMilliseconds(duration, to: &bytes)
        bytes.append(contentsOf: AccessLogText.bytes(#","method":"#))
        AccessLogText.appendQuoted(fields.method, to: &bytes)
        var target = fields.target
        let query = target.withUTF8 { t -> String? in
            let question = t.firstIndex(of: UInt8(ascii: "?"))
            bytes.append(contentsOf: AccessLogText.bytes(#","path":"#))
            AccessLogText.appendQuoted(UnsafeBufferPointer(rebasing: t[..<(question ?? t.count)]), to: &bytes)
            guard includeQuery, let question else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: t[(question + 1)...]), as: UTF8.self)
        }
        if let query {
            bytes.append(contentsOf: AccessLogText.bytes(#","query":"#))
            AccessLogText.appendQuoted(AccessLogRecord.redacted(query), to: &bytes)
        }
        number(#","replayed":"#, fields.replays)
        if let route = fields.route {
            bytes.append(contentsOf: AccessLogText.bytes(#","route":"#))
            AccessLogText.appendQuoted(route, to: &bytes)
        }
        number(#","status":"#, fields.status)
        bytes.append(contentsOf: AccessLogText.bytes(#","time":""#))
        time.append(fields.arrival, milliseconds: true, to: &bytes)
        bytes.append(0x22)
        if let g = fields.generation { number(#","tokenGeneration":"#, g) }
        if let t = fields.traceparent { AccessLogText.appendTraceID(t, to: &bytes) }
        if let s = fields.upstreamStatus { number(#","upstreamStatus":"#, s) }
        bytes.append(contentsOf: AccessLogText.bytes("}\n"))
    }

    private func number(_ member: StaticString, _ value: some BinaryInteger) {
        bytes.append(contentsOf: AccessLogText.bytes(member))
        bytes.appendDecimal(value)
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
