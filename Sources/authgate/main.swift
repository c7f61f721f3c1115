import ArgumentParser
import Glibc
import HTTPWire
import Runtime

/// The `authgate` command.
struct AuthGateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authgate",
        abstract: "An auth sidecar: attaches, refreshes and revokes tokens for the clients behind it.",
        subcommands: [Dev.self])
}

/// `authgate dev`: everything in one process on fixed loopback ports.
struct Dev: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run AuthGate in development mode on 127.0.0.1.")

    @Option(help: "Address of the proxy listener.") var host = "127.0.0.1"
    @Option(help: "Port of the proxy listener.") var port = 8080
    @Option(help: "Event loops (default: one per core).") var loops = EventLoopGroup.coreCount

    func run() throws {
        let signals = SignalWaiter(SIGINT, SIGTERM)
        let group = try EventLoopGroup(loopCount: loops)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: host, port: port), group: group, responder: HealthResponder())
        try server.start()
        print("AuthGate dev: listening on http://\(host):\(server.port) with \(loops) loops")
        print("  curl -i http://\(host):\(server.port)/livez")
        fflush(nil)
        let signal = signals.wait()
        print("AuthGate dev: signal \(signal), shutting down")
        server.shutdown(grace: .seconds(5))
        group.shutdown()
    }
}

/// Answers `/livez`; everything else is 404 problem+json.
struct HealthResponder: HTTPResponder {
    func respond(to request: HTTPRequest, writer: ResponseWriter) {
        switch request.head.path {
        case "/livez":
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: "application/json")
            writer.respond(status: 200, headers: h, body: Array("{\"status\":\"ok\"}".utf8))
        default:
            writer.respond(
                problem: Problem(
                    type: "https://authgate.dev/problems/not-found", title: "Not Found", status: 404,
                    detail: "no route matches this path"))
        }
    }
}

/// Blocks the given signals in every thread (call before starting threads) and waits for one.
struct SignalWaiter {
    private var set = sigset_t()

    init(_ signals: Int32...) {
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    func wait() -> Int32 {
        var set = self.set
        var sig: Int32 = 0
        sigwait(&set, &sig)
        return sig
    }
}

AuthGateCommand.main()
