import Foundation
import HTTPWire
import Logging

/// One JSON object per line on standard error: time, level, label, message, metadata.
/// Nothing logged anywhere in AuthGate carries a token; this handler adds nothing of its own.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (k, v) in metadata { fields[k] = "\(v)" }
        for (k, v) in event.metadata ?? [:] { fields[k] = "\(v)" }
        var line = "{\"ts\":\"\(Date().formatted(.iso8601))\",\"level\":\"\(event.level)\",\"logger\":\(quote(label)),\"msg\":\(quote("\(event.message)"))"
        for (k, v) in fields.sorted(by: { $0.key < $1.key }) { line += ",\(quote(k)):\(quote(v))" }
        line += "}\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    private func quote(_ s: String) -> String { Problem.quote(s) }
}
