import ArgumentParser
import Dispatch
import Glibc

/// The `authgate` command.
struct AuthGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authgate",
        abstract: "An auth sidecar: attaches, refreshes and revokes tokens for the clients behind it.",
        subcommands: [Serve.self, Dev.self, Status.self, Login.self, Logout.self, Events.self, Reload.self])
}

/// Runs the command the arguments name (ArgumentParser's async `main()`).
func runCommand() async {
    await AuthGateCommand.main()
}

// The signals a command takes through a service group are blocked before any other thread
// starts, so that every thread inherits the mask (``blockSignals(_:)``); the other commands
// take SIGINT and SIGTERM as they come, whatever mask they were started with.
if let name = CommandLine.arguments.dropFirst().first, let signals = trappedSignals[name] {
    blockSignals(signals)
} else {
    unblockSignals([SIGINT, SIGTERM])
}
// The entry point stays synchronous and its thread waits for the one task that runs the
// command: Swift's async `main` parks the main thread in `dispatch_main()`, which ends it
// with `pthread_exit`, and valgrind 3.19 (Debian 12; `scripts/bench-callgrind`) crashes then.
let finished = DispatchSemaphore(value: 0)
Task.detached {
    await runCommand()
    finished.signal()
}
finished.wait()
