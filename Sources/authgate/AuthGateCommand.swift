import ArgumentParser

/// The `authgate` command.
struct AuthGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authgate",
        abstract: "An auth sidecar: attaches, refreshes and revokes tokens for the clients behind it.",
        subcommands: [Serve.self, Dev.self, Status.self, Login.self, Logout.self, Events.self, Reload.self])
}

/// The process's entry: blocks the signals the subcommand takes through a service group
/// before any other thread starts, so that every thread inherits the mask
/// (``blockSignals(_:)``), then runs the command.
@main enum AuthGateMain {
    static func main() async {
        if let name = CommandLine.arguments.dropFirst().first, let signals = trappedSignals[name] {
            blockSignals(signals)
        }
        await AuthGateCommand.main()
    }
}
