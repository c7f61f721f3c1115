import ArgumentParser
import Foundation
import Gateway

/// `authgate reload`: asks a running gateway to read its configuration again
/// (`POST /auth/reload`, what SIGHUP does), and says what changed.
struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reload the gateway's configuration (POST /auth/reload): a summary, or the answer's JSON with --json.",
        discussion: "Exits 1 when the new configuration is refused (the running one keeps serving); the problem "
            + "document names the field at fault.")
    @OptionGroup var options: AdminOptions
    @Flag(help: "Print the answer as JSON (for scripts).") var json = false

    func run() async throws {
        guard options.session == nil else {
            throw ValidationError("--session: a reload applies to the whole gateway, not to one session")
        }
        try await options.call("POST", "/auth/reload") { text in json ? text : Self.summary(text) ?? text }
    }

    /// One line per kind of change, for people; nil when `text` is not a reload answer.
    static func summary(_ text: String) -> String? {
        struct Answer: Decodable {
            var reload: Int
            var applied: [String]
            var restartRequired: [String]
            var rotatedSecrets: [String]
        }
        guard let a = try? JSONDecoder().decode(Answer.self, from: Data(text.utf8)) else { return nil }
        var lines = ["reloaded (reload \(a.reload) of this process)"]
        if a.applied.isEmpty && a.restartRequired.isEmpty && a.rotatedSecrets.isEmpty {
            lines.append("  nothing changed")
        }
        if !a.applied.isEmpty { lines.append("  applied:          \(a.applied.joined(separator: ", "))") }
        if !a.rotatedSecrets.isEmpty { lines.append("  rotated secrets:  \(a.rotatedSecrets.joined(separator: ", "))") }
        if !a.restartRequired.isEmpty {
            lines.append("  restart required: \(a.restartRequired.joined(separator: ", ")) (running values kept)")
        }
        return lines.joined(separator: "\n")
    }
}
