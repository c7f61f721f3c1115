import AuthCore
import Foundation
import HTTPWire
import Runtime

extension AdminAPI {
    /// `GET /auth/events[?session=NAME]`: the session's events as Server-Sent Events, each with its id;
    /// `Last-Event-ID` (or `?last_event_id=`, passed in as `queryLastID`) resumes after a
    /// given id; a comment line every heartbeat keeps proxies from closing an idle stream.
    /// A `Last-Event-ID` that is not an event id is ignored, as EventSource clients expect;
    /// one from an earlier run of the gateway gets the current state (``EventIDs``).
    func streamEvents(
        _ session: GatewaySession, _ request: HTTPRequest, resumingAfter queryLastID: UInt64?, _ writer: ResponseWriter
    ) {
        let ids = configuration.eventIDs
        let lastID = request.head.headers[first: "last-event-id"].flatMap(AdminRoute.lastEventID) ?? queryLastID
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: "text/event-stream")
        h.add(name: "Cache-Control", value: "no-store")
        writer.writeHead(status: 200, headers: h)
        let stream = session.actor.events.subscribe(resumingAfter: lastID.flatMap(ids.broadcasterID))
        let heartbeat = configuration.heartbeat
        let events = tasks.start(on: request.loop) {
            do {
                try await writer.writeBody(Array("retry: 2000\n\n".utf8))
                for await record in stream {
                    let id = ids.sseID(record.id)
                    let head = "id: \(id)\nevent: \(record.event.name)\ndata: "
                    try await writer.writeBody(
                        Array(head.utf8) + AdminJSON.encode(EventDocument(record, id: id)) + Array("\n\n".utf8))
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
}
