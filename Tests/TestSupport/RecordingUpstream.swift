import Foundation
import Glibc
import Locking

/// A raw TCP upstream on loopback that records every byte it receives, per connection, and
/// answers each request it can frame (strictly: ``RecordedRequest/frame(_:)``) with the same
/// small response, `200` and ``RecordingUpstream/responseBody``.
///
/// For request-smuggling tests: what matters is what an origin server would have read from
/// the bytes a proxy sent, not what the proxy answered. Bytes that cannot be framed stay in
/// ``RecordedConnection/unframed`` (and the connection gets no more answers once they are
/// malformed), so a second request hidden in a first one's body, or a head the proxy passed
/// on half-parsed, is there to be seen.
///
/// ```swift
/// let upstream = try RecordingUpstream()
/// defer { upstream.stop() }
/// // … send requests through a proxy to upstream.port, stop the proxy …
/// _ = await eventually { upstream.allConnectionsClosed }
/// #expect(upstream.requests.map(\.target) == ["/public/a"])
/// ```
public final class RecordingUpstream: Sendable {
    /// The body of every answer.
    public static let responseBody = "recorded-upstream"

    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    /// `http://127.0.0.1:PORT`.
    public var url: String { "http://127.0.0.1:\(port)" }

    private let listener: Int32
    private let state = Locked(State())

    private struct State {
        var connections: [RecordedConnection] = []
        var sockets: [Int: Int32] = [:]
        var arrivals = 0
        var stopped = false
    }

    /// Starts listening and accepting at once.
    public init() throws {
        (listener, port) = try loopbackListener(backlog: 64)
        let fd = listener
        Thread.detachNewThread { [self] in accept(from: fd) }
    }

    /// Every connection accepted so far, in order, as recorded at this moment.
    public var connections: [RecordedConnection] { state.withLock { $0.connections } }

    /// Every request framed so far, on any connection, in the order they were framed.
    public var requests: [RecordedRequest] {
        connections.flatMap(\.requests).sorted { $0.arrival < $1.arrival }
    }

    /// Every byte received so far, on any connection, connection after connection.
    public var allBytes: [UInt8] { connections.flatMap(\.bytes) }

    /// Whether every connection accepted so far has been closed by its peer (or by ``stop()``).
    public var allConnectionsClosed: Bool { state.withLock { $0.connections.allSatisfy(\.closed) } }

    /// Stops accepting and closes every connection.
    public func stop() {
        let sockets = state.withLock { s -> [Int32] in
            s.stopped = true
            return Array(s.sockets.values)
        }
        for fd in sockets { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
    }

    private func accept(from listener: Int32) {
        while true {
            let c = Glibc.accept(listener, nil, nil)
            if c < 0 {
                // Closed here, not in `stop`: this thread calls `accept` until the shutdown
                // ends it, and the number must not be another socket's by then.
                Glibc.close(listener)
                return
            }
            let id = state.withLock { s -> Int? in
                guard !s.stopped else { return nil }
                s.connections.append(RecordedConnection(id: s.connections.count))
                s.sockets[s.connections.count - 1] = c
                return s.connections.count - 1
            }
            guard let id else {
                Glibc.close(c)
                continue
            }
            Thread.detachNewThread { [self] in serve(c, id: id) }
        }
    }

    /// Reads until the peer closes, recording every byte, and answers each framed request.
    private func serve(_ c: Int32, id: Int) {
        let answer = Array(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.responseBody.utf8.count)\r\n\r\n\(Self.responseBody)"
                .utf8)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            var framed = 0
            state.withLock { s in
                s.connections[id].bytes += chunk[0..<n]
                guard s.connections[id].malformed == nil else {
                    s.connections[id].unframed += chunk[0..<n]
                    return
                }
                s.connections[id].unframed += chunk[0..<n]
                while !s.connections[id].unframed.isEmpty {
                    switch RecordedRequest.frame(s.connections[id].unframed[...]) {
                    case .needMore:
                        return
                    case .malformed(let why):
                        s.connections[id].malformed = why
                        return
                    case .request(var request, let consumed):
                        request.connection = id
                        request.arrival = s.arrivals
                        s.arrivals += 1
                        s.connections[id].requests.append(request)
                        s.connections[id].unframed.removeFirst(consumed)
                        framed += 1
                    }
                }
            }
            for _ in 0..<framed {
                _ = answer.withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
        state.withLock { s in
            s.connections[id].closed = true
            s.sockets[id] = nil
        }
        Glibc.close(c)
    }
}

/// What one connection to a ``RecordingUpstream`` brought.
public struct RecordedConnection: Sendable {
    /// Its number, in the order connections were accepted.
    public let id: Int
    /// Every byte received on it, in order.
    public var bytes: [UInt8] = []
    /// The requests framed from those bytes, in order.
    public var requests: [RecordedRequest] = []
    /// The bytes after the last framed request: the start of a request still arriving, or
    /// what could not be framed.
    public var unframed: [UInt8] = []
    /// Why the bytes after the last framed request are not a request, if they are not.
    public var malformed: String?
    /// Whether the peer has closed it.
    public var closed = false

    init(id: Int) { self.id = id }
}
