import Foundation
import HTTPWire
import Locking
import Runtime
import Synchronization

/// A Swift upstream for proxy tests, on its own loops.
final class Upstream: Sendable {
    let group: EventLoopGroup
    let server: HTTPServer
    let responder: UpstreamResponder
    var port: Int { server.port }
    var url: String { "http://127.0.0.1:\(port)" }

    init() async throws {
        group = try EventLoopGroup(loopCount: 1, name: "upstream")
        responder = UpstreamResponder()
        server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: group, responder: responder)
        try await server.listen()
    }

    /// Stops the loops, which close the listener and every connection at once.
    func stop() {
        group.shutdown()
    }
}

final class UpstreamResponder: HTTPResponder {
    let cancelledExchanges = Atomic<Int>(0)
    let bytesReceived = Atomic<Int>(0)
    /// Requests that reached `respond(to:)`, by path: tests wait on it for "the request has
    /// arrived" instead of sleeping.
    private let arrived = Locked<[String: Int]>([:])
    /// Exchanges of `/held` waiting for ``releaseHeld()``.
    private let held = Locked<[ResponseWriter]>([])

    /// How many requests for `path` have arrived.
    func arrivals(_ path: String) -> Int { arrived.withLock { $0[path, default: 0] } }

    /// How many requests have arrived, whatever their path.
    var totalArrivals: Int { arrived.withLock { $0.values.reduce(0, +) } }

    /// Answers every `/held` exchange waiting so far with 200 `held`.
    func releaseHeld() {
        for writer in held.withLock({ w -> [ResponseWriter] in
            defer { w.removeAll() }
            return w
        }) {
            writer.respond(status: 200, body: Array("held".utf8))
        }
    }

    func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        // Streamed bodies reach `respond(to:)` with their head, before their bytes.
        head.path.hasSuffix("/sink") ? .stream : .buffer(maxBytes: limits.maxBufferedBodyBytes)
    }

    func respond(to request: HTTPRequest, writer: ResponseWriter) {
        let head = request.head
        arrived.withLock { $0[String(head.path), default: 0] += 1 }
        var h = HTTPHeaders()
        switch head.path {
        case _ where head.path.hasSuffix("/inspect"):
            // Reports what arrived, as lines: method, target, then each header.
            var lines = ["\(head.method) \(head.target)"]
            for (n, v) in head.headers { lines.append("\(n): \(v)") }
            if case .buffered(let b) = request.body { lines.append("body: \(String(decoding: b, as: UTF8.self))") }
            writer.respond(status: 200, body: Array(lines.joined(separator: "\n").utf8))
        case _ where head.path.hasSuffix("/sink"):
            // Counts a streamed upload without keeping it.
            guard case .stream(let s) = request.body else { return }
            let counter = self
            Task(executorPreference: request.loop) {
                var n = 0
                do { while let c = try await s.next() { n += c.count } } catch {}
                counter.bytesReceived.store(n, ordering: .relaxed)
                writer.respond(status: 200, body: Array(String(n).utf8))
            }
        case "/big":
            let size = Int(head.headers[first: "x-size"] ?? "") ?? 1 << 20
            Task(executorPreference: request.loop) {
                var hh = HTTPHeaders()
                if head.headers[first: "x-chunked"] == nil { hh.add(name: "Content-Length", value: String(size)) }
                writer.writeHead(status: 200, headers: hh)
                let block = [UInt8](repeating: 0x61, count: 64 * 1024)
                var sent = 0
                do {
                    while sent < size {
                        let n = min(block.count, size - sent)
                        try await writer.writeBody(n == block.count ? block : Array(block[0..<n]))
                        sent += n
                    }
                    writer.end()
                } catch {}
            }
        case "/die":
            // Promises 1 MB, sends 10 bytes, then drops the connection.
            h.add(name: "Content-Length", value: "1000000")
            writer.writeHead(status: 200, headers: h)
            Task(executorPreference: request.loop) {
                try? await writer.writeBody(Array("0123456789".utf8))
                try? await Task.sleep(for: .milliseconds(20))
                writer.abort()
            }
        case "/hang":
            // Never answers; counts the exchanges the proxy gives up.
            let counter = self
            writer.onClientGone { counter.cancelledExchanges.add(1, ordering: .relaxed) }
        case "/held":
            // Answers when the test calls `releaseHeld()`.
            held.withLock { $0.append(writer) }
        case "/redirect":
            h.add(name: "Location", value: "/elsewhere")
            writer.respond(status: 302, headers: h, body: Array("moved".utf8))
        case "/close":
            h.add(name: "Connection", value: "close")
            writer.respond(status: 200, headers: h, body: Array("closing".utf8))
        case "/hop":
            h.add(name: "Connection", value: "X-Internal")
            h.add(name: "X-Internal", value: "secret")
            h.add(name: "Keep-Alive", value: "timeout=5")
            h.add(name: "X-Kept", value: "yes")
            writer.respond(status: 200, headers: h, body: Array("hop".utf8))
        default:
            writer.respond(status: 200, body: Array("upstream".utf8))
        }
    }
}
