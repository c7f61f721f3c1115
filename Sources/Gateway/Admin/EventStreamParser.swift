/// Reads a `text/event-stream` as it arrives, in pieces of any size, into messages: the
/// client side of the admin API's `/auth/events`. Pure.
///
/// It follows the HTML Standard's parsing rules: lines end with LF, CR or CRLF (a CR at
/// the end of one piece and an LF at the start of the next are one line end); a line
/// starting with `:` is a comment (the heartbeats); `field: value` loses one space after
/// the colon; `data` lines are joined with LF; a blank line dispatches the message; an `id`
/// with a NUL is ignored; `retry` takes digits only. A message with no `data` is not
/// dispatched, but its `id` still counts, as in an `EventSource`.
///
/// ```swift
/// var parser = EventStreamParser()
/// for message in parser.feed(Array("id: 7\nevent: refreshed\ndata: {}\n\n".utf8)) {
///     print(message.id ?? "-", message.event, message.data)   // 7 refreshed {}
/// }
/// ```
public struct EventStreamParser: Sendable {
    /// One dispatched message.
    public struct Message: Sendable, Equatable {
        /// The last event id set so far in the stream (this message's, or an earlier one's).
        public var id: String?
        /// The `event` field; `message` when there was none.
        public var event: String
        /// The `data` lines, joined with LF.
        public var data: String
        /// Creates a message.
        public init(id: String?, event: String, data: String) {
            self.id = id
            self.event = event
            self.data = data
        }
    }

    /// The last `id` the stream set (sent as `Last-Event-ID` on reconnection).
    public private(set) var lastEventID: String?
    /// The last `retry` the stream set, in milliseconds.
    public private(set) var retryMilliseconds: Int?
    /// Bytes of the line being read, when one is longer than this the stream is refused
    /// (``feed(_:)`` returns what came before and ``overflowed`` turns true).
    public let maxLineBytes: Int
    /// Whether a line was longer than ``maxLineBytes`` (the stream cannot be trusted further).
    public private(set) var overflowed = false

    private var line: [UInt8] = []
    private var afterCR = false
    private var event = ""
    private var data: [String] = []
    private var sawData = false

    /// Creates a parser; lines longer than `maxLineBytes` are refused.
    public init(maxLineBytes: Int = 1 << 20) {
        self.maxLineBytes = maxLineBytes
    }

    /// Reads `bytes` and returns the messages they complete, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Message] {
        var out: [Message] = []
        for byte in bytes where !overflowed {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A:
                endLine(&out)
            case 0x0D:
                afterCR = true
                endLine(&out)
            default:
                line.append(byte)
                if line.count > maxLineBytes { overflowed = true }
            }
        }
        return out
    }

    private mutating func endLine(_ out: inout [Message]) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            if sawData {
                out.append(Message(id: lastEventID, event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n")))
            }
            event = ""
            data = []
            sawData = false
            return
        }
        if line.first == UInt8(ascii: ":") { return }
        let name: String
        var value: String
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            name = String(decoding: line[..<colon], as: UTF8.self)
            var start = line.index(after: colon)
            if start < line.endIndex, line[start] == UInt8(ascii: " ") { start += 1 }
            value = String(decoding: line[start...], as: UTF8.self)
        } else {
            name = String(decoding: line, as: UTF8.self)
            value = ""
        }
        switch name {
        case "event": event = value
        case "data":
            data.append(value)
            sawData = true
        case "id":
            if !value.utf8.contains(0) { lastEventID = value }
        case "retry":
            if !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let ms = Int(value) {
                retryMilliseconds = ms
            }
        default:
            value = ""
        }
    }
}
