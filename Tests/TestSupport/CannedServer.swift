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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw RawClient.ClientError.socket(errno)
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { [self] in serve() }
    }

    private func serve() {
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 { return }
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

    /// Stops accepting.
    public func stop() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }
}
