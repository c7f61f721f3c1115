import Foundation
import Glibc
import Locking
import TestSupport

/// A loopback TCP relay in front of a Unix socket, whose connections a test can cut (as a
/// proxy or a network would) and whose new connections it can refuse for a while.
final class TCPRelay: Sendable {
    let port: Int
    private let target: String
    private let listener: Int32
    private let open = Locked<Set<Int32>>([])
    private let refusing = Locked(false)

    init(toUnix target: String) throws {
        self.target = target
        (listener, port) = try loopbackListener()
        Thread.detachNewThread { [self] in accepting() }
    }

    /// Closes every relayed connection, both ways; the relay keeps listening.
    ///
    /// Under the lock: a pump closes its descriptors only after taking them out of `open`
    /// under it, so every descriptor shut down here is still the relay's. (Shutting down a
    /// number already closed would cut whatever socket of the process took it next.)
    func cut() {
        open.withLock { fds in
            for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// While true, a new connection is closed as soon as it is accepted.
    func refuse(_ on: Bool) { refusing.withLock { $0 = on } }

    /// Stops listening and cuts every connection. The listener is shut down here, which
    /// ends the accepting thread's `accept`, and closed by that thread as it ends: closed
    /// here, its number could be taken by another listener of the process before the thread
    /// calls `accept` again, and the relay would take that listener's connections.
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        cut()
    }

    private func accepting() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                Glibc.close(listener)
                return
            }
            if refusing.withLock({ $0 }) {
                Glibc.close(client)
                continue
            }
            guard let raw = try? RawClient(unixPath: target, timeoutSeconds: 5) else {
                Glibc.close(client)
                continue
            }
            // Its own descriptor, with no receive timeout: an event stream may be idle a while.
            let upstream = dup(raw.fd)
            var none = timeval(tv_sec: 0, tv_usec: 0)
            setsockopt(upstream, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
            open.withLock { $0.formUnion([client, upstream]) }
            Thread.detachNewThread { [self] in pump(from: client, to: upstream) }
            Thread.detachNewThread { [self] in pump(from: upstream, to: client) }
        }
    }

    /// Copies bytes one way until either side ends, then ends both.
    private func pump(from a: Int32, to b: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(a, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            let sent = buffer.withUnsafeBytes { Glibc.send(b, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
            if sent != n { break }
        }
        shutdown(a, Int32(SHUT_RDWR))
        shutdown(b, Int32(SHUT_RDWR))
        // The second pump of the pair closes both descriptors.
        let last = open.withLock { fds -> Bool in
            if fds.contains(a) {
                fds.remove(a)
                fds.remove(b)
                return false
            }
            return true
        }
        if last {
            Glibc.close(a)
            Glibc.close(b)
        }
    }
}
