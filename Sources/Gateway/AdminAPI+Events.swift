import Foundation
import AuthCore
import HTTPWire
import Runtime

extension AdminAPI {
    /// `GET /auth/events[?session=NAME]`: the session's events as Server-Sent Events, each with its id;
    /// `Last-Event-ID` (or `?last_event_id=`) resumes after a given id; a comment line
    /// every heartbeat keeps proxies from closing an idle stream.
    func streamEvents(_ session: GatewaySession, _ request: HTTPRequest, _ writer: ResponseWriter) {
        let lastID = request.head.headers[first: "last-event-id"].flatMap { UInt64($0) }
            ?? AdminAPI.queryValue(request.head.target, "last_event_id").flatMap { UInt64($0) }
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: "text/event-stream")
        h.add(name: "Cache-Control", value: "no-store")
        writer.writeHead(status: 200, headers: h)
        let stream = session.actor.events.subscribe(resumingAfter: lastID)
        let heartbeat = configuration.heartbeat
        let events = tasks.start(on: request.loop) {
            do {
                try await writer.writeBody(Array("retry: 2000\n\n".utf8))
                for await record in stream {
                    let message = "id: \(record.id)\nevent: \(record.event.name)\ndata: \(AdminJSON.event(record))\n\n"
                    try await writer.writeBody(Array(message.utf8))
                }
                writer.end()
            } catch {}
        }
        let beats = tasks.start(on: request.loop) {
            while !Task.isCancelled {
                try? await Task.sleep(for: heartbeat)
                if Task.isCancelled { break }
                do { try await writer.writeBody(Array(": heartbeat\n\n".utf8)) } catch { break }
            }
        }
        writer.onClientGone {
            events.cancel()
            beats.cancel()
        }
    }

    /// The first value of the query parameter `name`, percent-decoded; `""` when it is
    /// present without a value; `nil` when it is absent.
    static func queryValue(_ target: String, _ name: String) -> String? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false) {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv[0] == name else { continue }
            let raw = kv.count == 2 ? String(kv[1]) : ""
            // An undecodable value is kept as sent: it names no session and is refused.
            return raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
        }
        return nil
    }
}
