import Foundation
import Glibc

/// A loopback server that answers every connection with the same raw bytes, whatever
/// arrived, then closes it: for upstream responses no well-behaved server would send.
public final class CannedServer: @unchecked Sendable {
    // `fd` and `response` never change after init; the accept thread is the only reader.
    public let port: Int
    private let fd: Int32
    private let response: [UInt8]
    private let holdOpen: Bool

    /// `holdOpen`: after an answer the connection stays open for the next request until the
    /// peer closes it, as a kept-alive connection does, so a reader that expects more bytes
    /// waits for them.
    public init(response: String, holdOpen: Bool = false) throws {
        self.response = Array(response.utf8)
        self.holdOpen = holdOpen
        (fd, port) = try loopbackListener()
        Thread.detachNewThread { [self] in serve() }
    }

    private func serve() {
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 {
                // Closed here, not in `stop`: this thread calls `accept` until the shutdown
                // ends it, and the number must not be another socket's by then.
                Glibc.close(fd)
                return
            }
            if holdOpen {
                Thread.detachNewThread { [self] in answer(c) }
            } else {
                answer(c)
            }
        }
    }

    /// Reads a request head and answers it, then closes; when held open, answers each
    /// further request head the same way until the peer closes.
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
            _ = response.withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        } while holdOpen
        Glibc.close(c)
    }

    /// Stops accepting: the serving thread's `accept` fails, and that thread closes the
    /// listener.
    public func stop() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
