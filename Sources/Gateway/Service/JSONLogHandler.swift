import Foundation
import HTTPWire
public import Logging

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

    /// Writes one line.
    public func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (k, v) in metadata { fields[k] = json(v) }
        for (k, v) in event.metadata ?? [:] { fields[k] = json(v) }
        var line = "{\"ts\":\"\(Date().formatted(.iso8601))\",\"level\":\"\(event.level)\",\"logger\":\(quote(label)),\"msg\":\(quote("\(event.message)"))"
        for (k, v) in fields.sorted(by: { $0.key < $1.key }) { line += ",\(quote(k)):\(v)" }
        line += "}\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    private func quote(_ s: String) -> String { Problem.quote(s) }

    /// A metadata value as JSON: integers, finite numbers and booleans given as such (the access
    /// log's `status`, `bytesOut`, …) as themselves, anything else as a string.
    func json(_ value: Logger.MetadataValue) -> String {
        if case .stringConvertible(let v) = value {
            switch v {
            case let n as Int: return "\(n)"
            case let n as UInt64: return "\(n)"
            case let d as Double where d.isFinite: return "\(d)"
            case let b as Bool: return "\(b)"
            default: break
            }
        }
        return quote("\(value)")
    }
}
