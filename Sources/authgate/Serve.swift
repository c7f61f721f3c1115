import ArgumentParser
import Foundation
import Gateway
import Glibc
import Logging
import ServiceLifecycle

/// `authgate serve --config FILE`: the gateway for real.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the gateway with a configuration file (see README: Running it for real).",
        discussion: "The configuration comes from the JSON file, then AUTHGATE_* environment variables, then "
            + "flags, each overriding the one before, for every field: nested ones join their names "
            + "(authorization.tokenEndpoint is AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT and "
            + "--authorization-token-endpoint), array elements by index (--routes-0-upstream), and any "
            + "field takes JSON (AUTHGATE_ROUTES='[...]'). Secrets come from files, the environment "
            + "(AUTHGATE_STORE_KEY) or systemd credentials, never from flags. --print-config shows the "
            + "result and where each value came from.")

    @Option(help: "The JSON configuration file (optional when the environment and flags give every required field).")
    var config: String?
    @Flag(help: "Check the configuration and the secrets it names, then exit.") var checkConfig = false
    @Flag(help: "Print the effective configuration, each value with its source and every secret redacted, then exit.")
    var printConfig = false
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp(
            "Configuration fields as flags: --loops 2, --authorization-token-endpoint URL, …", valueName: "field flags"))
    var overrides: [String] = []

    func run() async throws {
        // Before any secret is read: no core dump or same-user ptrace can reach them.
        do {
            try ProcessHardening.disableDumping()
        } catch {
            FileHandle.standardError.write(Data("authgate: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let configuration: GatewayConfiguration
        let secrets: GatewayService.Secrets
        let layered: GatewayConfiguration.Layered
        let environment = ProcessInfo.processInfo.environment
        do {
            var file: (path: String, data: Data)?
            if let config {
                guard let data = FileManager.default.contents(atPath: config) else {
                    throw GatewayError.unreadable("--config", path: config)
                }
                file = (config, data)
            }
            layered = try GatewayConfiguration.load(
                file: file, environment: environment, arguments: overrides)
            configuration = layered.configuration
            // A Unix socket's directory (systemd's RuntimeDirectory=, a Kubernetes emptyDir).
            try configuration.checkListenerDirectories()
            // Read once: out of the environment, so nothing that reads it later (a child
            // process, a crash reporter, getenv) finds the key there.
            unsetenv("AUTHGATE_STORE_KEY")
            secrets = try SecretSources.resolve(configuration, environment: environment)
            // Created owner-only by `serve`; `--check-config` and `--print-config` only check one
            // that exists.
            do {
                try StateDirectory.prepare(configuration.stateDirectory, create: !checkConfig && !printConfig)
            } catch {
                throw error.prefixed(with: "stateDirectory")
            }
        } catch {
            FileHandle.standardError.write(Data("authgate: configuration error: \(error)\n".utf8))
            throw ExitCode(78)
        }
        if printConfig {
            print(ConfigurationReport.render(layered, environment: environment))
            return
        }
        if checkConfig {
            print("authgate: configuration OK (\(configuration.routes.count) routes)")
            return
        }
        let level = Logger.Level(rawValue: logLevel) ?? .info
        JSONLogHandler.bootstrap(level: level)
        // SIGTERM and SIGINT stop, SIGHUP reloads: blocked in every thread since the process
        // started (main.swift), so the service group's signal sources see them.
        let logger = Logger(label: "authgate")
        // Before the gateway exists: its proxy asks once whether a tracer is bootstrapped.
        let traceExport: (any Service)?
        do {
            traceExport = try TraceExport.start(environment: environment, logger: Logger(label: "authgate.otel"))
        } catch let error as GatewayError where error.code.isConfiguration {
            // It names its variable.
            FileHandle.standardError.write(Data("authgate: configuration error: \(error)\n".utf8))
            throw ExitCode(78)
        } catch {
            FileHandle.standardError.write(Data("authgate: configuration error: OTEL_*: \(error)\n".utf8))
            throw ExitCode(78)
        }
        // SIGHUP reloads (`POST /auth/reload` does the same).
        let runner = GatewayRunner(
            configuration: configuration, secrets: secrets, logger: logger,
            reloadSource: reloadSource(environment: environment), reloadSignals: [.sighup])
        do {
            try await runner.runUntilSignalled(alongside: traceExport.map { [$0] } ?? [])
        } catch let failure as GatewayError where [.issuerUnusable, .issuerUnreachable].contains(failure.code) {
            // A provider that answered with something unusable is a configuration error (78);
            // one that did not answer in time is unavailable (69, EX_UNAVAILABLE).
            let isConfigurationError = failure.code == .issuerUnusable
            let kind = isConfigurationError ? "configuration error" : "unavailable"
            FileHandle.standardError.write(Data("authgate: \(kind): \(failure)\n".utf8))
            throw ExitCode(isConfigurationError ? 78 : 69)
        } catch let error as GatewayError where error.code.isConfiguration {
            // Found only once connected: the token store's database (unreachable, a refused
            // password, missing rights) names its field like any other setting.
            FileHandle.standardError.write(Data("authgate: configuration error: \(error)\n".utf8))
            throw ExitCode(78)
        }
    }

    /// Reads the configuration again as `run` did: the file, the `AUTHGATE_*` variables of
    /// the environment the process started with (without the store key: the running key
    /// stays), and the same flags.
    private func reloadSource(environment: [String: String]) -> GatewayReloader.Source {
        var environment = environment
        environment["AUTHGATE_STORE_KEY"] = nil
        let path = config
        let overrides = overrides
        return { [environment] in
            var file: (path: String, data: Data)?
            if let path {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw GatewayError.unreadable("--config", path: path)
                }
                file = (path, data)
            }
            return try GatewayConfiguration.load(file: file, environment: environment, arguments: overrides).configuration
        }
    }
}
