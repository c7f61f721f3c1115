import CProcess
public import Foundation
import Glibc
import Locking

/// A child process started with `posix_spawn`, with the part of Foundation's `Process` API
/// the tests use (set the executable, arguments, environment and standard streams, then
/// ``run()``).
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` copying 256 bytes of each
/// directory entry, past the end of glibc's buffer, and now and then the whole test process
/// dies of it (swift-corelibs-foundation#5472, in Swift 6.3.1). This spawns the same way
/// without that scan: the child closes every descriptor from 3 up as it starts.
public final class Subprocess: @unchecked Sendable {
    // @unchecked: the settings are written before `run()` by the one thread that made it;
    // everything after `run()` is behind `state`.

    /// The program to run.
    public var executableURL: URL?
    /// Its arguments (not counting the program itself).
    public var arguments: [String] = []
    /// Its environment; nil: this process's.
    public var environment: [String: String]?
    /// Its standard input: a `Pipe` (it reads the read end), a `FileHandle`
    /// (`FileHandle.nullDevice` for none), or nil for this process's.
    public var standardInput: Any?
    /// Its standard output: a `Pipe` (it writes the write end), a `FileHandle`, or nil for
    /// this process's.
    public var standardOutput: Any?
    /// Its standard error, as ``standardOutput``.
    public var standardError: Any?

    private struct State {
        var pid: pid_t = 0
        /// The raw wait status once it has ended and been reaped.
        var status: Int32?
    }
    private let state = Locked(State())

    /// An unstarted process.
    public init() {}

    /// The process's id; 0 before ``run()``.
    public var processIdentifier: Int32 { state.withLock { $0.pid } }

    /// Starts the process. Throws when it cannot be spawned (the program missing or not
    /// executable among them).
    public func run() throws {
        guard let path = executableURL?.path else { throw SpawnFailed(path: "", code: ENOENT) }
        var actions = posix_spawn_file_actions_t()
        try check(posix_spawn_file_actions_init(&actions), path)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var devNull: Int32 = -1
        defer { if devNull >= 0 { close(devNull) } }
        // The parent's ends of the pipes, closed here once the child has its own.
        var childEnds: [FileHandle] = []
        for (stream, target, reads) in [
            (standardInput, STDIN_FILENO, true), (standardOutput, STDOUT_FILENO, false),
            (standardError, STDERR_FILENO, false),
        ] {
            var fd: Int32?
            switch stream {
            case let pipe as Pipe:
                let end = reads ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                fd = end.fileDescriptor
                childEnds.append(end)
            case let handle as FileHandle where handle === FileHandle.nullDevice:
                if devNull < 0 { devNull = open("/dev/null", O_RDWR | O_CLOEXEC) }
                if devNull < 0 { throw SpawnFailed(path: "/dev/null", code: errno) }
                fd = devNull
            case let handle as FileHandle:
                fd = handle.fileDescriptor
            default:
                fd = nil
            }
            if let fd { try check(posix_spawn_file_actions_adddup2(&actions, fd, target), path) }
        }
        try check(ag_spawn_file_actions_addclosefrom(&actions, 3), path)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0)=\($1)") } + [nil]
        defer { for pair in env { free(pair) } }
        // The child starts with no signal blocked or ignored, whatever this process (whose
        // service groups block the ones they take) has.
        var attributes = posix_spawnattr_t()
        try check(posix_spawnattr_init(&attributes), path)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        try check(posix_spawnattr_setsigmask(&attributes, &none), path)
        try check(posix_spawnattr_setsigdefault(&attributes, &all), path)
        try check(posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)), path)
        var pid: pid_t = 0
        try check(posix_spawn(&pid, path, &actions, &attributes, argv, env), path)
        state.withLock { $0.pid = pid }
        for end in childEnds { try? end.close() }
    }

    /// Whether the process has started and not yet ended.
    public var isRunning: Bool {
        state.withLock { s in
            guard s.pid > 0 else { return false }
            if s.status != nil { return false }
            var status: Int32 = 0
            if waitpid(s.pid, &status, WNOHANG) == s.pid {
                s.status = status
                return false
            }
            return true
        }
    }

    /// Blocks until the process has ended.
    public func waitUntilExit() {
        let pid = state.withLock { $0.pid }
        guard pid > 0 else { return }
        while state.withLock({ $0.status == nil }) {
            var status: Int32 = 0
            let r = waitpid(pid, &status, 0)
            if r == pid {
                state.withLock { $0.status = status }
            } else if r < 0 && errno == ECHILD {
                // Reaped meanwhile by ``isRunning`` on another thread: its status is kept.
                usleep(1000)
            }
        }
    }

    /// The exit code, or the number of the signal that ended it. Only once it has ended.
    public var terminationStatus: Int32 {
        guard let status = state.withLock({ $0.status }) else {
            preconditionFailure("the process has not ended")
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// Sends SIGTERM.
    public func terminate() {
        let pid = state.withLock { $0.pid }
        if pid > 0 { kill(pid, SIGTERM) }
    }

    private func check(_ code: Int32, _ path: String) throws {
        if code != 0 { throw SpawnFailed(path: path, code: code) }
    }
}

/// A process could not be spawned: `path`, and the error number.
public struct SpawnFailed: Error, CustomStringConvertible {
    /// The program.
    public let path: String
    /// The error number (`ENOENT`: no such program).
    public let code: Int32

    public var description: String { "cannot spawn \(path): \(String(cString: strerror(code)))" }
}
