// The servers the benchmarks run against nginx.
//
//   bench-server fixed PORT LOOPS            answers every request with a fixed 200
//   bench-server proxy PORT LOOPS UPSTREAM   forwards everything to UPSTREAM, adding a
//                                            static Authorization header (as nginx does
//                                            in the comparison)
import Dispatch
import Gateway
import Glibc
import HTTPWire
import Logging
import Runtime
import ServiceLifecycle

/// The server, announcing its address once it listens.
struct Serving: Service {
    let server: HTTPServer
    let mode: String
    let loops: Int

    func run() async throws {
        try await server.run { address in
            print("bench-server \(mode) listening on \(address) with \(loops) loops")
            fflush(nil)
        }
    }
}

struct Fixed: HTTPResponder {
    func respond(to request: HTTPRequest, writer: ResponseWriter) {
        writer.respond(status: 200, body: [0x6F, 0x6B])
    }
}

let args = CommandLine.arguments
guard args.count >= 4, let port = Int(args[2]), let loops = Int(args[3]) else {
    print("usage: bench-server fixed|proxy PORT LOOPS [UPSTREAM]")
    exit(2)
}
let responder: any HTTPResponder
switch args[1] {
case "proxy":
    guard args.count >= 5, let base = ProxyRoute.parseUpstream(args[4]) else {
        print("proxy mode needs an upstream URL")
        exit(2)
    }
    var inject = HTTPHeaders()
    inject.add(name: "Authorization", value: "Bearer benchmark-static-token")
    responder = ReverseProxy(
        routes: [ProxyRoute(prefix: "/", upstream: base.origin, upstreamPath: base.path, injectHeaders: inject)],
        clientConfiguration: UpstreamClientConfiguration(loopHTTP1: true))
default:
    responder = Fixed()
}
// SIGINT and SIGTERM stop the server gracefully through the service group; they are
// blocked first so that no loop thread takes them.
var set = sigset_t()
sigemptyset(&set)
sigaddset(&set, SIGINT)
sigaddset(&set, SIGTERM)
pthread_sigmask(SIG_BLOCK, &set, nil)
let group = try EventLoopGroup(loopCount: loops)
var configuration = HTTPServerConfiguration(port: port)
configuration.shutdownGrace = .seconds(1)
let server = HTTPServer(configuration: configuration, group: group, responder: responder)
let services = ServiceGroup(
    configuration: .init(
        services: [Serving(server: server, mode: args[1], loops: loops)], gracefulShutdownSignals: [.sigterm, .sigint],
        cancellationSignals: [], logger: Logger(label: "bench-server")))
// The main thread waits for the one task that serves, as `authgate`'s does: Swift's async
// `main` parks it in `dispatch_main()`, which valgrind 3.19 cannot follow (the callgrind
// runs of docs/RUNTIME.md).
let finished = DispatchSemaphore(value: 0)
Task.detached {
    do {
        try await services.run()
    } catch {
        print("bench-server: \(error)")
    }
    await group.close()
    finished.signal()
}
finished.wait()
