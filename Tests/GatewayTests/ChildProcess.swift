import Foundation
import Glibc
import Locking
import TestSupport

/// The built `authgate` binary run as a child process, its standard output and error read
/// as they come (for commands that run until stopped, such as `events` and `serve`).
final class ChildProcess: Sendable {
    /// The binary next to the test bundle (`swift build` puts both in the same directory).
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("authgate").path
    }

    private let process: Locked<Subprocess>
    private let out = Locked<[UInt8]>([])
    private let err = Locked<[UInt8]>([])
    private let drained = Locked(0)
    let pid: Int32

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let process = Subprocess()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["AUTHGATE_ADMIN_TOKEN"] = nil
        env["AUTHGATE_STORE_KEY"] = nil
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        pid = process.processIdentifier
        self.process = Locked(process)
        for (pipe, sink) in [(stdout, out), (stderr, err)] {
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread { [drained] in
                while true {
                    let data = handle.availableData
                    if data.isEmpty {
                        drained.withLock { $0 += 1 }
                        return
                    }
                    sink.withLock { $0 += data }
                }
            }
        }
    }

    /// Everything printed on standard output so far.
    var output: String { out.withLock { String(decoding: $0, as: UTF8.self) } }
    /// Everything printed on standard error so far.
    var errors: String { err.withLock { String(decoding: $0, as: UTF8.self) } }
    /// The complete lines of standard output so far.
    var lines: [String] {
        let text = output
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Sends `signal` to the process.
    func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits for the process to end (at most `timeout`); its exit status, or nil when it
    /// had not ended (it is then killed).
    func wait(timeout: Duration = .seconds(120)) async -> Int32? {
        let ended = await eventually(timeout: timeout) { !self.process.withLock { $0.isRunning } }
        if !ended {
            kill(pid, SIGKILL)
            process.withLock { $0.waitUntilExit() }
            return nil
        }
        // The readers end once they have read everything the process wrote.
        _ = await eventually(timeout: .seconds(5)) { self.drained.withLock { $0 } == 2 }
        return process.withLock { $0.terminationStatus }
    }

    /// Kills the process if it still runs.
    func stop() {
        if process.withLock({ $0.isRunning }) {
            kill(pid, SIGKILL)
            process.withLock { $0.waitUntilExit() }
        }
    }
}
