import Foundation
import HTTPWire
import Locking
import Runtime

extension AdminClient {
    /// Follows a session's events (`path`: `/auth/events`, with its query) for `authgate
    /// events` and the device login, until the task is cancelled: calls `message` for every
    /// new message in order, through dropped connections and gateway restarts, resuming with
    /// `Last-Event-ID` so that no event the gateway still holds is lost or shown twice, and
    /// `notice` with a sentence whenever the connection is lost or made again. `lastEventID`
    /// resumes after that event.
    ///
    /// ```swift
    /// try await client.follow(path: "/auth/events") { message in print(message.data) } notice: { print($0) }
    /// ```
    ///
    /// It ends when its task is cancelled (returning normally) or when the admin API
    /// refuses the request for good (a ``GatewayError`` with ``GatewayError/Code/adminRefused``:
    /// a wrong admin token, an unknown session) or cannot be reached at the first attempt
    /// (``GatewayError/Code/adminUnreachable``).
    public func follow(
        path: String, lastEventID: String? = nil, message: @escaping @Sendable (EventStreamParser.Message) -> Void,
        notice: @escaping @Sendable (String) -> Void
    ) async throws {
        let client = try await Self.client(
            UpstreamClientConfiguration(
                totalTimeout: nil, idleTimeout: eventsIdleTimeout, unixSocketPath: endpoint.unixSocketPath))
        defer { Self.retire(client) }
        try await follow(with: client, path: path, lastEventID: lastEventID, message: message, notice: notice)
    }

    /// ``follow(path:lastEventID:message:notice:)`` with `client`, which the caller retires.
    private func follow(
        with client: UpstreamClient, path: String, lastEventID: String?,
        message: @escaping @Sendable (EventStreamParser.Message) -> Void, notice: @escaping @Sendable (String) -> Void
    ) async throws {
        var policy = EventStreamReconnect()
        var lastID = lastEventID
        var retry: Int?
        var lastShown: UInt64?
        var reconnecting = false
        while !Task.isCancelled {
            var headers = HTTPHeaders()
            if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
            headers.add(name: "Accept", value: "text/event-stream")
            if let lastID { headers.add(name: "Last-Event-ID", value: lastID) }
            let request = UpstreamRequest(method: "GET", url: endpoint.url(path), headers: headers)
            var parser = EventStreamParser()
            var status: Int?
            var streamed = false
            var refusal: [UInt8] = []
            var ending: RuntimeError?
            for await piece in Self.exchange(request, client: client, loop: client.loop) {
                switch piece {
                case .head(let s, let contentType):
                    status = s
                    streamed = s == 200 && (contentType ?? "").hasPrefix("text/event-stream")
                    if streamed && reconnecting {
                        notice("reconnected" + (lastID.map { ", resuming after event \($0)" } ?? ""))
                        reconnecting = false
                    }
                case .body(let bytes) where streamed:
                    for m in parser.feed(bytes) {
                        // A replayed event already shown is skipped; a `state` event is a
                        // snapshot of now, always shown.
                        if let id = m.id.flatMap(UInt64.init), let shown = lastShown, id <= shown, m.event != "state" { continue }
                        lastShown = m.id.flatMap(UInt64.init) ?? lastShown
                        message(m)
                    }
                    lastID = parser.lastEventID ?? lastID
                    retry = parser.retryMilliseconds ?? retry
                case .body(let bytes):
                    if refusal.count < 64 * 1024 { refusal += bytes }
                case .end(let error):
                    ending = error
                }
            }
            if Task.isCancelled { return }
            let why =
                if let ending { Self.reason(ending) } else if let status, !streamed {
                    "the admin API answered \(status)"
                } else {
                    "the gateway closed the stream"
                }
            switch policy.decide(status: status, streamed: streamed, retryMilliseconds: retry) {
            case .stop(let s):
                throw GatewayError.adminRefused(status: s, body: String(decoding: refusal, as: UTF8.self))
            case .unreachable:
                throw GatewayError.adminUnreachable(why)
            case .reconnect(let delay):
                notice(
                    "connection lost (\(why)); reconnecting in \(Self.seconds(delay))"
                        + (lastID.map { ", to resume after event \($0)" } ?? ""))
                reconnecting = true
                do { try await Task.sleep(for: delay) } catch { return }
            }
        }
    }

    /// What one exchange reports, in order.
    enum Piece: Sendable {
        case head(Int, contentType: String?)
        case body([UInt8])
        case end(RuntimeError?)
    }

    /// Runs one exchange on `loop`; the stream ends with `.end` (the task's cancellation
    /// cancels the transfer, which ends it too).
    static func exchange(_ request: UpstreamRequest, client: UpstreamClient, loop: EventLoop) -> AsyncStream<Piece> {
        let (stream, continuation) = AsyncStream.makeStream(of: Piece.self)
        let state = Locked<(cancelled: Bool, transfer: LoopBound<any UpstreamTransfer>?)>((false, nil))
        loop.executeSoonOrNow {
            guard !state.withLock({ $0.cancelled }) else {
                continuation.yield(.end(.upstream(.cancelled, "cancelled")))
                continuation.finish()
                return
            }
            let transfer = client.start(request, handler: StreamHandler(continuation))
            state.withLock { $0.transfer = LoopBound(transfer, loop: loop) }
        }
        continuation.onTermination = { _ in
            let transfer = state.withLock { s -> LoopBound<any UpstreamTransfer>? in
                s.cancelled = true
                return s.transfer
            }
            transfer?.withValue { $0.cancel() }
        }
        return stream
    }

    /// An exchange's failure in words for people.
    static func reason(_ error: RuntimeError) -> String {
        switch error.code {
        case .connectFailed: "nothing answers at the admin address"
        case .connectionReset: "the connection was reset"
        case .timeout: "no heartbeat came"
        case .invalidResponse: "the connection closed"
        default: error.code.description
        }
    }

    static func seconds(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : String(format: "%.1f s", Double(ms) / 1000)
    }
}

/// Hands an exchange's head, body and end to an `AsyncStream`. Loop-confined (libcurl calls
/// it on the client's loop).
private final class StreamHandler: UpstreamResponseHandler {
    let continuation: AsyncStream<AdminClient.Piece>.Continuation

    init(_ continuation: AsyncStream<AdminClient.Piece>.Continuation) {
        self.continuation = continuation
    }

    func upstreamHead(status: Int, headers: consuming HTTPHeaders) {
        continuation.yield(.head(status, contentType: headers[first: "content-type"]))
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        continuation.yield(.body(Array(bytes)))
        return true
    }

    func upstreamFinished(_ error: RuntimeError?) {
        continuation.yield(.end(error))
        continuation.finish()
    }
}
