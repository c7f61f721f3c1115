// The servers the benchmarks run against nginx.
//
//   bench-server fixed PORT LOOPS            answers every request with a fixed 200
//   bench-server proxy PORT LOOPS UPSTREAM   forwards everything to UPSTREAM, adding a
//                                            static Authorization header (as nginx does
//                                            in the comparison)
import Gateway
import Glibc
import HTTPWire
import Runtime

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
var set = sigset_t()
sigemptyset(&set)
sigaddset(&set, SIGINT)
sigaddset(&set, SIGTERM)
pthread_sigmask(SIG_BLOCK, &set, nil)
let group = try EventLoopGroup(loopCount: loops)
let server = HTTPServer(configuration: HTTPServerConfiguration(port: port), group: group, responder: responder)
try server.start()
print("bench-server \(args[1]) listening on 127.0.0.1:\(server.port) with \(loops) loops")
fflush(nil)
var sig: Int32 = 0
sigwait(&set, &sig)
server.shutdown(grace: .seconds(1))
group.shutdown()
