import Foundation
import Glibc

/// A blocking TCP or Unix socket client for tests: sends raw bytes, reads raw responses.
public final class RawClient {
    public let fd: Int32
    private var buffer: [UInt8] = []

    /// The read and write timeout a client gets unless its test names one: 5 s, or 30 s under
    /// the sanitizers (`scripts/sanitize` sets `AUTHGATE_SANITIZER`), whose slowdown on two
    /// shared cores makes an ordinary answer take longer than 5 s. A test that relies on a
    /// timeout passing (to show that nothing came) names its own.
    public static let defaultTimeoutSeconds = runsUnderSanitizer ? 30 : 5

    /// Connects to `port` on 127.0.0.1.
    public init(port: Int, timeoutSeconds: Int = RawClient.defaultTimeoutSeconds) throws {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        fd = try Self.connected(AF_INET, &addr, timeoutSeconds: timeoutSeconds)
    }

    /// Connects to the Unix domain socket at `unixPath`.
    public init(unixPath: String, timeoutSeconds: Int = RawClient.defaultTimeoutSeconds) throws {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(unixPath.utf8)
        precondition(bytes.count < MemoryLayout.size(ofValue: addr.sun_path), "socket path too long")
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        fd = try Self.connected(AF_UNIX, &addr, timeoutSeconds: timeoutSeconds)
    }

    private static func connected<Address>(_ family: Int32, _ addr: inout Address, timeoutSeconds: Int) throws -> Int32 {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError.socket(errno) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw ClientError.connect(e)
        }
        return fd
    }

    deinit { Glibc.close(fd) }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw ClientError.send(errno) }
            off += n
        }
    }

    public func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads until the peer closes (or the timeout); returns everything read.
    public func readToEnd() -> [UInt8] {
        var out = buffer
        buffer = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    /// Reads one response (head + Content-Length or chunked body).
    public func readResponse(headRequest: Bool = false) throws -> TestResponse {
        while true {
            if let (resp, used) = TestResponse.parse(buffer, headRequest: headRequest) {
                buffer.removeFirst(used)
                return resp
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            // EAGAIN here is the read timeout; 0 is the peer closing.
            if n < 0 { throw ClientError.receive(errno, buffered: String(decoding: buffer, as: UTF8.self)) }
            if n == 0 { throw ClientError.closed(buffered: String(decoding: buffer, as: UTF8.self)) }
            buffer += chunk[0..<n]
        }
    }

    /// Whether the server closed the connection (reads EOF within the timeout).
    public func isClosedByPeer() -> Bool {
        var b: UInt8 = 0
        let n = recv(fd, &b, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    public enum ClientError: Error {
        case socket(Int32)
        case connect(Int32)
        case send(Int32)
        case receive(Int32, buffered: String)
        case closed(buffered: String)
    }
}

/// A parsed response.
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    public var text: String { String(decoding: body, as: UTF8.self) }

    public static func parse(_ bytes: [UInt8], headRequest: Bool = false) -> (TestResponse, Int)? {
        let sep: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.firstRange(of: sep) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.map { line -> (String, String) in
            let i = line.firstIndex(of: ":")!
            return (String(line[..<i]), line[line.index(after: i)...].trimmingCharacters(in: .whitespaces))
        }
        var resp = TestResponse(status: status, headers: headers, body: [])
        var pos = end.upperBound
        if headRequest || status == 204 || status == 304 || (100..<200).contains(status) { return (resp, pos) }
        if let cl = resp.header("content-length").flatMap(Int.init) {
            guard bytes.count - pos >= cl else { return nil }
            resp.body = Array(bytes[pos..<pos + cl])
            return (resp, pos + cl)
        }
        if resp.header("transfer-encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            while true {
                guard let lineEnd = bytes[pos...].firstRange(of: [13, 10]) else { return nil }
                let sizeText = String(decoding: bytes[pos..<lineEnd.lowerBound], as: UTF8.self)
                guard let size = Int(sizeText, radix: 16) else { return nil }
                pos = lineEnd.upperBound
                if size == 0 {
                    guard bytes.count - pos >= 2 else { return nil }
                    resp.body = body
                    return (resp, pos + 2)
                }
                guard bytes.count - pos >= size + 2 else { return nil }
                body += bytes[pos..<pos + size]
                pos += size + 2
            }
        }
        return nil
    }
}
