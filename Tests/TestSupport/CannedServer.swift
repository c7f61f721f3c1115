import Foundation
import Glibc

/// A loopback server that answers every connection with the same raw bytes, whatever
/// arrived, then closes it: for upstream responses no well-behaved server would send.
public final class CannedServer: @unchecked Sendable {
    // `fd` and `response` never change after init; the accept thread is the only reader.
    public let port: Int
    private let fd: Int32
    private let response: [UInt8]

    public init(response: String) throws {
        self.response = Array(response.utf8)
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
            // Read the request head, then answer and close.
            var seen: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 4096)
            while !seen.suffix(4).elementsEqual([13, 10, 13, 10]) {
                let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                seen += buf[0..<n]
            }
            _ = response.withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            Glibc.close(c)
        }
    }

    /// Stops accepting: the serving thread's `accept` fails, and that thread closes the
    /// listener.
    public func stop() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
