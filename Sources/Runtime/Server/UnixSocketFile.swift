import Glibc

/// The file-system side of a Unix socket listener: what is at its path, whether anyone
/// answers there, and the removal of a stale socket file (decided by ``StaleSocketRule``).
enum UnixSocketFile {
    /// Makes `path` free for `bind`: leaves a free path alone, removes a socket file nobody
    /// answers on, and throws for a live socket, a file of another kind or an unusable path.
    static func prepare(_ path: String) throws(RuntimeError) {
        _ = try address(path)
        let found = try inspect(path)
        let probe = found == .socket ? probe(path) : nil
        switch StaleSocketRule.action(found: found, probe: probe) {
        case .bind:
            return
        case .removeThenBind:
            if unlink(path) != 0 && errno != ENOENT { throw .listen(-errno, "unlink stale socket \(path)") }
        case .refuse(let code, let reason):
            throw .listen(code, "listen unix:\(path)", reason: reason)
        }
    }

    /// What is at `path` (without following a symbolic link).
    static func inspect(_ path: String) throws(RuntimeError) -> StaleSocketRule.Found {
        var info = stat()
        if lstat(path, &info) != 0 {
            let e = errno
            if e == ENOENT { return .nothing }
            throw .listen(-e, "lstat \(path)")
        }
        return info.st_mode & S_IFMT == S_IFSOCK ? .socket : .notSocket
    }

    /// Tries to connect to the socket at `path`, without blocking.
    static func probe(_ path: String) -> StaleSocketRule.Probe {
        guard var addr = try? address(path) else { return .failed(-ENAMETOOLONG) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed(-errno) }
        defer { close(fd) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc == 0 { return .answered }
        switch errno {
        case ECONNREFUSED: return .refused
        case EAGAIN, EINPROGRESS: return .answered
        case ENOENT: return .vanished
        case let e: return .failed(-e)
        }
    }

    /// The `sockaddr_un` of `path`; throws `ENAMETOOLONG` past ``ListenAddress/maxUnixPathBytes``
    /// (libuv 1.44 would cut the path short without a word) and `EINVAL` for a NUL in it.
    static func address(_ path: String) throws(RuntimeError) -> sockaddr_un {
        let bytes = Array(path.utf8)
        guard bytes.count <= ListenAddress.maxUnixPathBytes else {
            throw .listen(
                -ENAMETOOLONG, "listen unix:\(path)", reason: "a socket path has at most \(ListenAddress.maxUnixPathBytes) bytes")
        }
        guard !bytes.isEmpty, !bytes.contains(0) else {
            throw .listen(-EINVAL, "listen unix:\(path)", reason: "not a usable socket path")
        }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        return addr
    }
}
