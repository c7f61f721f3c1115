internal import Foundation

/// Random bytes drawn from the kernel a block at a time: a DPoP proof per proxied request
/// needs 16 fresh bytes for its `jti`, and one read of the kernel's generator per 256 proofs
/// costs a fraction of one per proof. Not for keys: the bytes only have to be unique, never secret.
struct RandomBlock {
    static let size = 4096
    private var bytes = [UInt8](repeating: 0, count: RandomBlock.size)
    private var used = RandomBlock.size

    /// The next `count` bytes (at most ``size``), drawing a new block when this one is spent.
    mutating func take(_ count: Int) -> [UInt8] {
        precondition(count <= Self.size)
        if used + count > bytes.count {
            refill()
            used = 0
        }
        defer { used += count }
        return Array(bytes[used..<(used + count)])
    }

    private mutating func refill() {
        // One open, one read, one close per block (`getrandom` is not visible to Swift here).
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        let filled =
            fd >= 0
            && bytes.withUnsafeMutableBytes { buffer -> Bool in
                var at = 0
                while at < buffer.count {
                    let n = read(fd, buffer.baseAddress! + at, buffer.count - at)
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { return false }
                    at += n
                }
                return true
            }
        if fd >= 0 { close(fd) }
        if !filled {
            // No /dev/urandom (a container without /dev): the standard library's generator.
            var generator = SystemRandomNumberGenerator()
            for i in bytes.indices { bytes[i] = generator.next() }
        }
    }
}
