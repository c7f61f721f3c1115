import ArgumentParser

/// The `authgate` command.
struct AuthGateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authgate",
        abstract: "An auth sidecar: attaches, refreshes and revokes tokens for the clients behind it.",
        subcommands: [Serve.self, Dev.self, Status.self, Login.self, Logout.self, Events.self, Reload.self])
}

AuthGateCommand.main()
