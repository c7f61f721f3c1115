import Glibc

/// `SOCK_STREAM` as `socket(2)` takes it. Test modules that also see libuv's headers
/// through `@testable import Runtime` can fail to find Glibc's constant, depending on how
/// the compiler batches their files; this module imports only Glibc.
public let streamSocketType = Int32(SOCK_STREAM.rawValue)

/// `SOCK_DGRAM` as `socket(2)` and `socketpair(2)` take it (see ``streamSocketType``).
public let datagramSocketType = Int32(SOCK_DGRAM.rawValue)

/// A TCP socket listening on 127.0.0.1 at a port the kernel chose: the descriptor and the
/// port. Throws (closing the socket) when bind or listen fails.
public func loopbackListener(backlog: Int32 = 16) throws -> (fd: Int32, port: Int) {
    try loopbackSocket(listenBacklog: backlog)
}

/// A TCP socket bound to 127.0.0.1 at a port the kernel chose that does not listen: while it
/// is open, a connection to the port is refused and nothing else can take the port. Close
/// the descriptor when done. Throws (closing the socket) when bind fails.
public func refusingLoopbackPort() throws -> (fd: Int32, port: Int) {
    try loopbackSocket(listenBacklog: nil)
}

/// Binds a new TCP socket to 127.0.0.1, port 0, and listens when `listenBacklog` is given.
private func loopbackSocket(listenBacklog: Int32?) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, streamSocketType, 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, len) == 0 && listenBacklog.map { listen(fd, $0) == 0 } ?? true && getsockname(fd, $0, &len) == 0
        }
    }
    guard ok else {
        let e = errno
        Glibc.close(fd)
        throw RawClient.ClientError.socket(e)
    }
    return (fd, Int(UInt16(bigEndian: addr.sin_port)))
}

/// Accepts connections on the listening `fd` and hands each to `handle`, until the socket is
/// shut down; then closes it. Closed here, not by whoever shuts it down: the accepting thread
/// calls `accept` until the shutdown ends it, and the number must not be another socket's by
/// then.
public func acceptEach(_ fd: Int32, _ handle: (Int32) -> Void) {
    while true {
        let c = accept(fd, nil, nil)
        if c < 0 {
            Glibc.close(fd)
            return
        }
        handle(c)
    }
}
