import Foundation
import Glibc
import Synchronization

/// A loopback server that answers every connection with the same raw bytes, whatever
/// arrived: for upstream responses no well-behaved server would send.
public final class CannedServer: @unchecked Sendable {
    // `fd`, `response` and `after` never change after init; the accept thread is the only
    // reader of `fd`.
    public let port: Int
    private let fd: Int32
    private let response: [UInt8]
    private let after: AfterAnswer
    private let delay: Duration
    private let stopped = Atomic<Bool>(false)

    /// What the server does with a connection once it has answered a request head.
    public enum AfterAnswer: Sendable {
        /// Closes it.
        case close
        /// Answers each further request head the same way until the peer closes, as a
        /// kept-alive connection does: a reader that expects more bytes waits for them.
        case serveNext
        /// Keeps it open and reads nothing more until ``stop()``, as a server that answered
        /// early and never reads the rest of a request body.
        case stall
    }

    /// `holdOpen`: ``AfterAnswer/serveNext`` instead of ``AfterAnswer/close``.
    public convenience init(response: String, holdOpen: Bool = false) throws {
        try self.init(response: response, after: holdOpen ? .serveNext : .close)
    }

    /// `delay`: how long after a request head the answer is sent.
    public init(response: String, after: AfterAnswer, delay: Duration = .zero) throws {
        self.response = Array(response.utf8)
        self.after = after
        self.delay = delay
        (fd, port) = try loopbackListener()
        Thread.detachNewThread { [self] in serve() }
    }

    private func serve() {
        acceptEach(fd) { c in
            if after == .close {
                answer(c)
            } else {
                Thread.detachNewThread { [self] in answer(c) }
            }
        }
    }

    /// Reads a request head and answers it, then does what `after` says; each connection is
    /// closed by the thread that serves it.
    private func answer(_ c: Int32) {
        var seen: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        repeat {
            while seen.firstRange(of: [13, 10, 13, 10]) == nil {
                let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 {
                    Glibc.close(c)
                    return
                }
                seen += buf[0..<n]
            }
            seen.removeSubrange(..<seen.firstRange(of: [13, 10, 13, 10])!.upperBound)
            if delay > .zero {
                Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            }
            _ = response.withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        } while after == .serveNext
        if after == .stall {
            while !stopped.load(ordering: .relaxed) { usleep(20_000) }
        }
        Glibc.close(c)
    }

    /// Stops accepting: the serving thread's `accept` fails, and that thread closes the
    /// listener. Stalled connections close.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
