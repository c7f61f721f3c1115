#if canImport(Glibc)
    private import Glibc
#elseif canImport(Darwin)
    private import Darwin
#endif

/// Durable whole-file writes and reads with plain system calls: write a temporary file,
/// `fsync` it, `rename` it over the target (or `link` it, to create a file only once),
/// `fsync` the directory.
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
            throw AuthError.io(errno, operation: step.rawValue)
        }
    }

    /// Replaces the file at `path` with `bytes`, mode `mode`, durably.
    func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o600) throws {
        let temporary = try writeTemporary(bytes, for: path, mode: mode)
        var committed = false
        defer {
            if !committed { unlink(temporary) }
        }
        try check(.rename, path)
        guard rename(temporary, path) == 0 else {
            throw AuthError.io(errno, operation: "rename")
        }
        committed = true
        try syncDirectory(of: path)
    }

    /// Creates the file at `path` with `bytes`, mode `mode`, durably, unless it exists.
    /// Returns false, writing nothing, when it exists: of several processes creating the
    /// same file at once, exactly one succeeds and the others then read its content, never
    /// a part of it (the file appears whole, by `link`).
    func create(_ bytes: [UInt8], at path: String, mode: UInt32 = 0o600) throws -> Bool {
        let temporary = try writeTemporary(bytes, for: path, mode: mode)
        defer { unlink(temporary) }
        try check(.rename, path)
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw AuthError.io(errno, operation: "link")
        }
        try syncDirectory(of: path)
        return true
    }

    /// Writes `bytes` to a new temporary file beside `path` and syncs it; returns its path.
    private func writeTemporary(_ bytes: [UInt8], for path: String, mode: UInt32) throws -> String {
        let temporary = "\(path)\(Self.temporaryMarker)\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try check(.open, temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw AuthError.io(errno, operation: "open") }
        var written = false
        defer {
            if !written { unlink(temporary) }
        }
        defer { close(fd) }
        guard fchmod(fd, mode_t(mode)) == 0 else {
            throw AuthError.io(errno, operation: "fchmod")
        }
        try check(.write, temporary)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw AuthError.io(errno, operation: "write")
            }
            offset += n
        }
        try check(.fsync, temporary)
        guard fsync(fd) == 0 else { throw AuthError.io(errno, operation: "fsync") }
        written = true
        return temporary
    }

    /// What temporary file names carry between the target's name and `<pid>-<random>`.
    static let temporaryMarker = ".tmp-"

    /// Removes the temporary files in `directory` whose writing process no longer exists
    /// (a crash between writing and renaming leaves one). Those of live processes, this one
    /// included, are left alone: they may be in the middle of a write. Best effort: a file
    /// that cannot be removed stays and is harmless.
    func removeStaleTemporaries(in directory: String) {
        guard let dir = opendir(directory) else { return }
        defer { closedir(dir) }
        let me = getpid()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard let pid = Self.writerPID(ofTemporary: name), pid != me, kill(pid, 0) != 0, errno == ESRCH else { continue }
            // Best effort (see above): a failure leaves the file, which nothing reads.
            _ = unlink("\(directory)/\(name)")
        }
    }

    /// The pid in a temporary file name `<name>.tmp-<pid>-<random>`, or nil for other names.
    static func writerPID(ofTemporary name: String) -> Int32? {
        let bytes = Array(name.utf8)
        let marker = Array(temporaryMarker.utf8)
        guard bytes.count > marker.count,
            let start = (0...(bytes.count - marker.count)).last(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) })
        else { return nil }
        let parts = bytes[(start + marker.count)...].split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ !$0.isEmpty && $0.count <= 10 && $0.allSatisfy { (0x30...0x39).contains($0) } }),
            let pid = Int32(String(decoding: parts[0], as: UTF8.self)), pid > 0
        else { return nil }
        return pid
    }

    /// The contents of `path`, or `nil` when it does not exist.
    func read(_ path: String) throws -> [UInt8]? {
        try check(.read, path)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw AuthError.io(errno, operation: "open")
        }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw AuthError.io(errno, operation: "read")
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
            throw AuthError.io(errno, operation: "unlink")
        }
        try syncDirectory(of: path)
    }

    /// Creates `directory` (mode 0700) when absent.
    func ensureDirectory(_ directory: String) throws {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw AuthError.io(errno, operation: "mkdir")
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
        guard fd >= 0 else { throw AuthError.io(errno, operation: "open directory") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw AuthError.io(errno, operation: "fsync directory") }
    }
}
