import Foundation
import Glibc

/// The state directory holds the sealed tokens and the key file the key that opens them:
/// both must be the owner's alone. The directory is created owner-only (0700), and AuthGate
/// refuses to start when either lets the group or others in, naming the path and its mode.
///
/// ```swift
/// try StateDirectory.prepare(configuration.stateDirectory)   // mkdir -p, then 0700 or refuse
/// try StateDirectory.checkKeyFile("/etc/authgate/store.key")  // 0600 / 0400 or refuse
/// ```
public enum StateDirectory {
    /// Whether `mode` gives the group or others no permission at all.
    public static func isOwnerOnly(_ mode: UInt32) -> Bool {
        mode & 0o077 == 0
    }

    /// Creates `path` (mode 0700; missing parents with the usual mode) when `create` is true
    /// and it is absent, then checks that it is a directory only its owner can enter.
    /// Throws a ``GatewayError`` naming the path otherwise (field `stateDirectory`).
    public static func prepare(_ path: String, create: Bool = true) throws(GatewayError) {
        let (what, advice) = ("the state directory", "it holds the sealed tokens: chmod 700 \(path)")
        if try check(path, what, field: "stateDirectory", advice: advice) || !create { return }
        try makeDirectory(path)
        // Made a moment ago: gone again only if something removed it meanwhile.
        guard try check(path, what, field: "stateDirectory", advice: advice) else {
            throw GatewayError(.unusablePath, field: "stateDirectory", "cannot use \(what) \(path): \(reason(ENOENT))")
        }
    }

    /// Checks that the key file at `path`, when it exists, is a file only its owner can
    /// read (0600 or 0400). Throws a ``GatewayError`` naming the path otherwise (field `keyFile`).
    public static func checkKeyFile(_ path: String) throws(GatewayError) {
        _ = try check(path, "the store key file", field: "keyFile", advice: "chmod 600 \(path)", isDirectory: false)
    }

    /// Whether `path` exists; when it does, that it is a directory (if `isDirectory`) that
    /// lets neither its group nor others in. `what` names it in messages (`the state
    /// directory`), `advice` ends the one about its mode.
    private static func check(
        _ path: String, _ what: String, field: String, advice: String, isDirectory: Bool = true
    ) throws(GatewayError) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0 else {
            let e = errno
            if e == ENOENT { return false }
            throw GatewayError(.unusablePath, field: field, "cannot use \(what) \(path): \(reason(e))")
        }
        if isDirectory, st.st_mode & S_IFMT != S_IFDIR {
            throw GatewayError(.unusablePath, field: field, "\(what) \(path) is not a directory")
        }
        guard isOwnerOnly(st.st_mode) else {
            throw GatewayError(
                .unsafePermissions, field: field,
                "\(what) \(path) is accessible to its group or others (mode \(octal(st.st_mode))); \(advice)")
        }
        return true
    }

    private static func makeDirectory(_ path: String) throws(GatewayError) {
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path {
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            } catch {
                throw GatewayError(
                    .unusablePath, field: "stateDirectory", "cannot create the parent of the state directory \(path)",
                    underlying: error)
            }
        }
        // mkdir applies the umask, which can only remove bits: 0700 stays 0700 or less.
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw GatewayError(
                .unusablePath, field: "stateDirectory", "cannot create the state directory \(path): \(reason(errno))")
        }
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension StateDirectory {
    /// Bytes an unprivileged writer may still use on the file system holding `path`, or
    /// nil when it cannot be asked.
    public static func freeBytes(_ path: String) -> Int? {
        var fs = statvfs()
        guard statvfs(path, &fs) == 0 else { return nil }
        let (bytes, overflow) = Int(fs.f_bavail).multipliedReportingOverflow(by: Int(fs.f_frsize))
        return overflow ? Int.max : bytes
    }
}
