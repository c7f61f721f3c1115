import AuthCore
import Foundation
import HTTPWire
public import Logging
import Runtime

/// One JSON object per line on standard error: time, level, label, message, metadata.
/// Nothing logged anywhere in AuthGate carries a token; this handler adds nothing of its own.
public struct JSONLogHandler: LogHandler {
    /// The logger's label.
    public let label: String
    /// The lowest level written.
    public var logLevel: Logger.Level = .info
    /// Metadata written on every line.
    public var metadata: Logger.Metadata = [:]

    /// Creates a handler for `label`.
    public init(label: String, logLevel: Logger.Level = .info) {
        self.label = label
        self.logLevel = logLevel
    }

    /// Bootstraps swift-log with this handler at `level`, once per process.
    public static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { JSONLogHandler(label: $0, logLevel: level) }
    }

    /// Metadata by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line, built as UTF-8 in one buffer and written with one call.
    public func log(event: LogEvent) {
        var fields = event.metadata ?? [:]
        // The handler's own entries, unless the event's have the same key (no merge copy in
        // the common case: the handler carries none).
        for (key, value) in metadata where fields[key] == nil { fields[key] = value }
        let line = Self.line(time: Date(), level: event.level, label: label, message: "\(event.message)") { line in
            for key in fields.keys.sorted() {
                line.append(0x2C)
                Problem.appendQuoted(key, to: &line)
                line.append(0x3A)
                Self.append(fields[key]!, to: &line)
            }
        }
        FileHandle.standardError.write(Data(line))
    }

    /// Writes a line of `label` at `level` whose members after `msg` `members` appends
    /// (each as `,"name":value`, in name order), as ``log(event:)`` would write the same
    /// members given as metadata, without building a metadata dictionary (the access log's
    /// line per request).
    ///
    /// On an event loop's thread the line joins what the loop writes after the I/O of its
    /// turn (``Runtime/EventLoop/appendOutput(_:to:)``): one `write(2)` for all the lines of a
    /// turn. Elsewhere it is written at once.
    static func write(level: Logger.Level, label: String, message: String, members: (inout [UInt8]) -> Void) {
        let bytes = line(time: Date(), level: level, label: label, message: message, members: members)
        if let loop = EventLoop.current {
            loop.appendOutput(bytes, to: 2)
        } else {
            FileHandle.standardError.write(Data(bytes))
        }
    }

    /// The bytes of one line.
    static func line(
        time: Date, level: Logger.Level, label: String, message: String, members: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(320)
        line.appendUTF8(#"{"ts":""#)
        RFC3339.append(time, to: &line)
        line.appendUTF8(#"","level":"#)
        Problem.appendQuoted(level.rawValue, to: &line)
        line.appendUTF8(#","logger":"#)
        Problem.appendQuoted(label, to: &line)
        line.appendUTF8(#","msg":"#)
        Problem.appendQuoted(message, to: &line)
        members(&line)
        line.appendUTF8("}\n")
        return line
    }

    /// Appends a metadata value as JSON: integers, finite numbers and booleans (the access
    /// log's `status`, `bytesOut`, …) as themselves, anything else as a string.
    static func append(_ value: Logger.MetadataValue, to line: inout [UInt8]) {
        switch value {
        case .string(let s):
            Problem.appendQuoted(s, to: &line)
        case .stringConvertible(let v):
            switch v {
            case let n as Int: line.append(contentsOf: String(n).utf8)
            case let n as UInt64: line.append(contentsOf: String(n).utf8)
            case let d as Double where d.isFinite: line.appendUTF8("\(d)")
            case let b as Bool: line.append(contentsOf: (b ? "true" : "false").utf8)
            default: Problem.appendQuoted(v.description, to: &line)
            }
        default:
            Problem.appendQuoted("\(value)", to: &line)
        }
    }
}
