import ArgumentParser
import Foundation
import Gateway
import Glibc

/// `authgate events`: the session's events as they come, one line each (`--json`: each
/// event's JSON document), through dropped connections and gateway restarts; Ctrl-C ends it
/// with status 0.
struct Events: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow the session's events (GET /auth/events) until Ctrl-C, one line each.",
        discussion: "The first line is the session's state now; then one line per event as it happens. "
            + "When the connection drops or the gateway restarts, it reconnects and resumes after "
            + "the last event shown (Last-Event-ID), so no event the gateway still holds is lost "
            + "or shown twice; notices about the connection go to standard error.")
    @OptionGroup var options: AdminOptions
    @Flag(help: "Print each event's JSON document (the SSE data), one a line.") var json = false
    @Option(help: "Resume after this event id instead of starting from the state now.") var lastEventID: String?

    func validate() throws {
        if let id = lastEventID, id.isEmpty || !id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) || UInt64(id) == nil {
            throw ValidationError("--last-event-id must be an event id: decimal digits")
        }
    }

    func run() async throws {
        // Ctrl-C (or SIGTERM) ends it with status 0: every line was written as it came, so
        // there is nothing to flush.
        signal(SIGINT) { _ in _exit(0) }
        signal(SIGTERM) { _ in _exit(0) }
        // A reader that went away is a write that fails (EPIPE), not a signal that kills.
        signal(SIGPIPE, SIG_IGN)
        let client = try options.client()
        let path = try options.addressed("/auth/events")
        let session = options.session ?? GatewayConfiguration.defaultSession
        let json = json
        do {
            try await client.follow(path: path, lastEventID: lastEventID) { message in
                let line = json ? message.data : EventLine.format(event: message.event, data: message.data, session: session)
                // One write per line, unbuffered: a pipe sees each event as it happens. When
                // the reader has gone (`authgate events | head -1`), there is no one to tell.
                if !writeLine(line) { Glibc.exit(0) }
            } notice: { text in
                FileHandle.standardError.write(Data("authgate events: \(text)\n".utf8))
            }
        } catch let refused as GatewayError where refused.code == .adminRefused {
            FileHandle.standardError.write(Data("authgate events: \(refused)\n".utf8))
            throw ExitCode(1)
        } catch let unreachable as GatewayError where unreachable.code == .adminUnreachable {
            FileHandle.standardError.write(Data("authgate events: \(unreachable) (\(options.admin))\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// Writes `line` and a line feed to standard output with write(2), all of it; false when the
/// output is gone (a closed pipe) or fails.
func writeLine(_ line: String) -> Bool {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return false }
        offset += n
    }
    return true
}
