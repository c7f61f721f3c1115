import ArgumentParser
import Foundation
import Gateway

/// `authgate login --grant device`: starts a device login (RFC 8628) through the admin API,
/// prints where to go and the code to enter, and waits for the session's events until the
/// login completes (exit 0) or ends without logging in (exit 1, with the reason). The
/// events are followed from before the login starts, so none is missed.
enum DeviceLoginCommand {
    static func run(_ options: AdminOptions, body: [UInt8]) async throws {
        let client = try options.client()
        let eventsPath = try options.addressed("/auth/events")
        let loginPath = try options.addressed("/auth/login")
        let code = try await login(client, eventsPath: eventsPath, loginPath: loginPath, body: body)
        if code != 0 { throw ExitCode(code) }
    }

    /// Follows the events, starts the login, prints the instructions and waits for the end:
    /// the exit status. The follower and the deadline are child tasks: both end with it.
    private static func login(
        _ client: AdminClient, eventsPath: String, loginPath: String, body: [UInt8]
    ) async throws -> Int32 {
        let (messages, continuation) = AsyncStream.makeStream(of: EventStreamParser.Message.self)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            group.addTask {
                // Finished also when the events are refused: the wait below ends either way.
                defer { continuation.finish() }
                try await client.follow(path: eventsPath) {
                    continuation.yield($0)
                } notice: { text in
                    FileHandle.standardError.write(Data("authgate login: \(text)\n".utf8))
                }
            }
            var iterator = messages.makeAsyncIterator()
            // The state now: every event after it comes after the login starts.
            guard await iterator.next() != nil else {
                // The events ended before their first message: the follower's refusal says why.
                try await group.next()
                return 1
            }
            let response = try await client.send("POST", loginPath, json: body)
            let text = String(decoding: response.body, as: UTF8.self)
            guard response.status == 202, let (instructions, expiresIn) = DeviceLoginWatch.instructions(text) else {
                print(text)
                return 1
            }
            // Unbuffered: whoever reads a pipe must see the code now, not when the login ends.
            _ = writeLine(instructions)
            // The gateway ends the login at the codes' expiry; past it and a margin, stop
            // waiting for a gateway that no longer answers.
            group.addTask {
                try? await Task.sleep(for: .seconds(expiresIn + 30))
                continuation.finish()
            }
            while let message = await iterator.next() {
                switch DeviceLoginWatch.verdict(event: message.event, data: message.data) {
                case .waiting: continue
                case .loggedIn(let summary):
                    _ = writeLine("logged in" + (summary.isEmpty ? "" : ": \(summary)"))
                    return 0
                case .failed(let reason):
                    FileHandle.standardError.write(Data("authgate login: the device login ended: \(reason)\n".utf8))
                    return 1
                }
            }
            return 1
        }
    }
}
