import Foundation
import Glibc
import Locking

/// A loopback HTTP/1.1 keep-alive server that completes every TCP handshake at once (its
/// accept thread takes each connection as it comes) but answers slowly, and counts on its
/// side the connections it accepted and has not answered yet: how many connection attempts
/// a client has in flight that the server has not proven it serves.
///
/// Each request gets `200 OK` with a two-byte body, `delay` after its head arrived; with
/// `holdUntil`, nothing is answered before that many connections were accepted (a server
/// whose first answers come late, like a long poll).
public final class SlowAnswerServer: @unchecked Sendable {
    // `fd`, `delay` and `holdUntil` never change after init; the counts are under the lock,
    // and the accept thread is the only reader of `fd`.
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    private let fd: Int32
    private let delay: Duration
    private let holdUntil: Int
    private let counts = Locked(Counts())
    private let stopped = Locked(false)

    private struct Counts {
        var accepted = 0
        var unanswered = 0
        var peakUnanswered = 0
    }

    /// Listens on a port the kernel chooses; throws when it cannot.
    public init(delay: Duration, holdUntil: Int = 0) throws {
        self.delay = delay
        self.holdUntil = holdUntil
        (fd, port) = try loopbackListener(backlog: 128)
        Thread.detachNewThread { [self] in serve() }
    }

    /// Connections accepted so far.
    public var accepted: Int { counts.withLock { $0.accepted } }

    /// The most connections that were accepted and not yet answered at once.
    public var peakUnanswered: Int { counts.withLock { $0.peakUnanswered } }

    private func serve() {
        acceptEach(fd) { c in
            counts.withLock {
                $0.accepted += 1
                $0.unanswered += 1
                $0.peakUnanswered = max($0.peakUnanswered, $0.unanswered)
            }
            Thread.detachNewThread { [self] in answer(c) }
        }
    }

    /// Answers each request head on `c` until the peer closes it or the server stops.
    private func answer(_ c: Int32) {
        defer { Glibc.close(c) }
        let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        var seen: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        var first = true
        while true {
            while seen.firstRange(of: [13, 10, 13, 10]) == nil {
                let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return }
                seen += buf[0..<n]
            }
            seen.removeSubrange(..<seen.firstRange(of: [13, 10, 13, 10])!.upperBound)
            while accepted < holdUntil {
                if stopped.withLock({ $0 }) { return }
                usleep(1_000)
            }
            let (seconds, attoseconds) = delay.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            if first {
                // Counted off before the answer leaves: the client cannot hear it earlier,
                // so the count never runs ahead of the client's own.
                first = false
                counts.withLock { $0.unanswered -= 1 }
            }
            let sent = response.withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 { return }
        }
    }

    /// Stops accepting: the accept thread's `accept` fails and that thread closes the
    /// listener; held connections close.
    public func stop() {
        stopped.withLock { $0 = true }
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
