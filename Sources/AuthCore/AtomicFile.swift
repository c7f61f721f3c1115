#if canImport(Glibc)
    private import Glibc
#elseif canImport(Darwin)
    private import Darwin
#endif

/// Durable whole-file writes and reads with plain system calls: write a temporary file,
/// `fsync` it, `rename` it over the target, `fsync` the directory.
///
/// A crash at any point leaves either the old file or the new one, never a torn one.
struct AtomicFile: Sendable {
    /// The operations a fault can be injected into (tests only).
    enum Step: String, Sendable {
        case open, write, fsync, rename, fsyncDirectory, unlink, read
    }

    /// Returns an errno to fail `step` with, or `nil` to let it run. Tests only.
    typealias FaultInjector = @Sendable (_ step: Step, _ path: String) -> Int32?

    let faults: FaultInjector?

    init(faults: FaultInjector? = nil) {
        self.faults = faults
    }

    private func check(_ step: Step, _ path: String) throws {
        if let errno = faults?(step, path) {
            throw FileSystemError(errno: errno, operation: step.rawValue)
        }
    }

    /// Replaces the file at `path` with `bytes`, mode `mode`, durably.
    func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o600) throws {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try check(.open, temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw FileSystemError(errno: errno, operation: "open") }
        var committed = false
        defer {
            if !committed { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            guard fchmod(fd, mode_t(mode)) == 0 else {
                throw FileSystemError(errno: errno, operation: "fchmod")
            }
            try check(.write, temporary)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { buffer in
                    Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw FileSystemError(errno: errno, operation: "write")
                }
                offset += written
            }
            try check(.fsync, temporary)
            guard fsync(fd) == 0 else { throw FileSystemError(errno: errno, operation: "fsync") }
        }
        try check(.rename, path)
        guard rename(temporary, path) == 0 else {
            throw FileSystemError(errno: errno, operation: "rename")
        }
        committed = true
        try syncDirectory(of: path)
    }

    /// The contents of `path`, or `nil` when it does not exist.
    func read(_ path: String) throws -> [UInt8]? {
        try check(.read, path)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw FileSystemError(errno: errno, operation: "open")
        }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileSystemError(errno: errno, operation: "read")
            }
            if count == 0 { break }
            result.append(contentsOf: chunk[0..<count])
        }
        return result
    }

    /// Removes `path` durably; an absent file is fine.
    func remove(_ path: String) throws {
        try check(.unlink, path)
        if unlink(path) != 0 {
            if errno == ENOENT { return }
            throw FileSystemError(errno: errno, operation: "unlink")
        }
        try syncDirectory(of: path)
    }

    /// Creates `directory` (mode 0700) when absent.
    func ensureDirectory(_ directory: String) throws {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw FileSystemError(errno: errno, operation: "mkdir")
        }
    }

    private func syncDirectory(of path: String) throws {
        try check(.fsyncDirectory, path)
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSystemError(errno: errno, operation: "open directory") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw FileSystemError(errno: errno, operation: "fsync directory") }
    }
}
