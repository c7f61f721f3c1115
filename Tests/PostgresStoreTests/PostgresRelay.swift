import Foundation
import Glibc
import Locking

/// A loopback TCP relay in front of the test PostgreSQL that counts the client's round trips,
/// can hold every flight back by a one-way delay (a database far away), and can cut its
/// clients off silently, as a network partition does.
///
/// - Round trips: PostgresNIO sends each query as one flight (`Parse`, `Bind`, `Execute`,
///   `Sync`) and waits for its answer before the next on that connection, so the statements
///   the client sent (``statements``, from the `Parse` and `Query` messages) are its round
///   trips.
/// - ``partition()``: from then on nothing passes, either way, and nothing is closed: no
///   reset, no FIN, the client sees silence. New connections are accepted but get no
///   answer. ``heal()`` lets new connections through again; the connections that were open
///   during the cut stay silent for good (as after a long cut, when TCP's retransmissions
///   come minutes apart), so the client has to notice and connect again.
final class PostgresRelay: Sendable {
    let port: Int
    private let targetPort: Int
    /// How long each flight is held back, each way: a round trip costs twice this.
    private let oneWayDelay: Duration
    private let listener: Int32
    private struct State {
        var open: Set<Int32> = []
        var statements: [String] = []
        /// The cut's number; a connection opened before the current one is silent for good.
        var cut = 0
        var partitioned = false
    }
    private let state = Locked(State())

    init(toPort targetPort: Int, oneWayDelay: Duration = .zero) throws {
        self.targetPort = targetPort
        self.oneWayDelay = oneWayDelay
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { [self] in accepting() }
    }

    /// The statements the clients sent so far, in order, but those the store sends on its
    /// own clock: the pings (`SELECT 1`) and the listening connection's `LISTEN`.
    var statements: [String] {
        state.withLock { $0.statements }.filter { $0 != "SELECT 1" && !$0.hasPrefix("LISTEN ") }
    }

    /// Cuts every client off silently.
    func partition() {
        state.withLock {
            $0.cut += 1
            $0.partitioned = true
        }
    }

    /// New connections pass again; those open during the cut stay silent.
    func heal() { state.withLock { $0.partitioned = false } }

    /// Stops listening and closes every relayed connection.
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        state.withLock { s in for fd in s.open { shutdown(fd, Int32(SHUT_RDWR)) } }
    }

    private func accepting() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                Glibc.close(listener)
                return
            }
            Thread.detachNewThread { [self] in relay(client) }
        }
    }

    private func relay(_ client: Int32) {
        // Accepted during a cut: no answer until it heals (a SYN that is dropped).
        while state.withLock({ $0.partitioned }) { usleep(10_000) }
        let cut = state.withLock { $0.cut }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(targetPort).bigEndian)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(upstream)
            Glibc.close(client)
            return
        }
        state.withLock { $0.open.formUnion([client, upstream]) }
        Thread.detachNewThread { [self] in pump(from: client, to: upstream, cut: cut, counting: true) }
        Thread.detachNewThread { [self] in pump(from: upstream, to: client, cut: cut, counting: false) }
    }

    /// Copies bytes one way until either side ends (dropping them once this connection was
    /// cut off), then ends both. With a delay, what arrived is sent that much later; bytes
    /// arriving meanwhile wait in the kernel (a protocol that waits for each answer, as the
    /// store's does, sees each flight delayed once).
    private func pump(from a: Int32, to b: Int32, cut: Int, counting: Bool) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        var frames = FrontendFrames()
        let delay = Double(oneWayDelay.components.seconds) + Double(oneWayDelay.components.attoseconds) / 1e18
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(a, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            let silent = state.withLock { $0.cut != cut }
            if silent { continue }
            if counting {
                let statements = frames.feed(buffer[0..<n])
                if !statements.isEmpty { state.withLock { $0.statements += statements } }
            }
            let sent = buffer.withUnsafeBytes { Glibc.send(b, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
            if sent != n { break }
        }
        shutdown(a, Int32(SHUT_RDWR))
        shutdown(b, Int32(SHUT_RDWR))
        let last = state.withLock { s -> Bool in
            if s.open.contains(a) {
                s.open.remove(a)
                s.open.remove(b)
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

/// Splits the client's byte stream into protocol messages (the untyped startup message
/// first) and answers the text of each statement sent (`Parse` or `Query`).
struct FrontendFrames {
    private var pending: [UInt8] = []
    private var startedUp = false

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [String] {
        pending.append(contentsOf: bytes)
        var texts: [String] = []
        var at = 0
        while true {
            let header = startedUp ? 5 : 4
            guard pending.count - at >= header else { break }
            let lengthAt = startedUp ? at + 1 : at
            let length =
                Int(pending[lengthAt]) << 24 | Int(pending[lengthAt + 1]) << 16 | Int(pending[lengthAt + 2]) << 8
                | Int(pending[lengthAt + 3])
            let total = (startedUp ? 1 : 0) + length
            guard pending.count - at >= total else { break }
            if startedUp, pending[at] == UInt8(ascii: "P") || pending[at] == UInt8(ascii: "Q") {
                // Parse: name NUL, text NUL, ...; Query: text NUL.
                var fields = pending[(at + 5)..<(at + total)].split(separator: 0, omittingEmptySubsequences: false)
                if pending[at] == UInt8(ascii: "P") { fields = Array(fields.dropFirst()) }
                texts.append(String(decoding: fields.first ?? [], as: UTF8.self))
            }
            startedUp = true
            at += total
        }
        pending.removeFirst(at)
        return texts
    }
}
