// The bare HTTP/1.1 server answering a fixed 200, for comparison with nginx `return 200`.
// Usage: bare-server PORT LOOPS
import Glibc
import HTTPWire
import Runtime

struct Fixed: HTTPResponder {
    func respond(to request: HTTPRequest, writer: ResponseWriter) {
        writer.respond(status: 200, body: [0x6F, 0x6B])
    }
}

let args = CommandLine.arguments
let port = args.count > 1 ? Int(args[1]) ?? 8090 : 8090
let loops = args.count > 2 ? Int(args[2]) ?? EventLoopGroup.coreCount : EventLoopGroup.coreCount
var set = sigset_t()
sigemptyset(&set)
sigaddset(&set, SIGINT)
sigaddset(&set, SIGTERM)
pthread_sigmask(SIG_BLOCK, &set, nil)
let group = try EventLoopGroup(loopCount: loops)
let server = HTTPServer(configuration: HTTPServerConfiguration(port: port), group: group, responder: Fixed())
try server.start()
print("bare-server listening on 127.0.0.1:\(server.port) with \(loops) loops")
fflush(nil)
var sig: Int32 = 0
sigwait(&set, &sig)
server.shutdown(grace: .seconds(1))
group.shutdown()
