import Glibc
internal import Locking

/// The contents of the certificate and key files of the identities requests show, handed to
/// libcurl as blobs rather than as paths.
///
/// libcurl reuses a connection for a request whose certificate *path* matches, so a file
/// renewed in place would go on being shown as the old certificate for as long as a
/// connection stays open, and a server that binds tokens to the certificate (RFC 8705 §3)
/// would see them come back over a connection showing another. Blobs are compared by their
/// bytes: once a file changes, requests no longer match the old connections and open new
/// ones. The files are looked at again at most once a second per identity (one `stat` each),
/// and read only when their inode, size or modification time changed.
final class TLSIdentityContents: Sendable {
    /// The one cache of the process: identities are few, and shared by every loop.
    static let shared = TLSIdentityContents()

    struct Contents: Sendable {
        var certificate: [UInt8]
        var key: [UInt8]
    }

    private struct Entry {
        var contents: Contents?
        var stamps: [FileStamp?]
        var checked: ContinuousClock.Instant
    }

    /// What identifies a version of a file without reading it.
    struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: Int
        var modifiedNanoseconds: Int

        init?(_ path: String) {
            var s = stat()
            guard statPath(path, &s) == 0 else { return nil }
            inode = UInt64(s.st_ino)
            size = Int64(s.st_size)
            modified = s.st_mtim.tv_sec
            modifiedNanoseconds = s.st_mtim.tv_nsec
        }
    }

    private let entries = Locked<[TLSClientIdentity: Entry]>([:])
    private let recheck: Duration

    init(recheck: Duration = .seconds(1)) {
        self.recheck = recheck
    }

    /// The bytes of both files as they are now (at most `recheck` old); nil when either cannot
    /// be read, and libcurl is then given the paths (and reports the failure itself).
    func contents(of identity: TLSClientIdentity, now: ContinuousClock.Instant = .now) -> Contents? {
        if let fresh = entries.withLock({ e -> Contents?? in
            guard let entry = e[identity], now - entry.checked < recheck else { return .none }
            return .some(entry.contents)
        }) {
            return fresh
        }
        let stamps = [FileStamp(identity.certificateFile), FileStamp(identity.keyFile)]
        if let unchanged = entries.withLock({ e -> Contents?? in
            guard var entry = e[identity], entry.stamps == stamps, !stamps.contains(nil) else { return .none }
            entry.checked = now
            e[identity] = entry
            return .some(entry.contents)
        }) {
            return unchanged
        }
        let contents: Contents? =
            if let certificate = Self.read(identity.certificateFile), let key = Self.read(identity.keyFile) {
                Contents(certificate: certificate, key: key)
            } else {
                nil
            }
        entries.withLock { $0[identity] = Entry(contents: contents, stamps: stamps, checked: now) }
        return contents
    }

    /// The whole file, or nil (at most 1 MiB: a certificate chain is a few kilobytes).
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<n])
            if bytes.count > 1 << 20 { return nil }
        }
    }
}

/// `stat(2)`, out of the scope of ``TLSIdentityContents/FileStamp``, where `stat` names the
/// struct.
private func statPath(_ path: String, _ s: inout stat) -> Int32 {
    stat(path, &s)
}
