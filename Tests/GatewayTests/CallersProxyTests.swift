import Foundation
import Gateway
import Glibc
import HTTPWire
import Runtime
import TestSupport
import Testing

/// A route that names its callers serves them alone, over real sockets: on a Unix socket by
/// the kernel's credentials of the peer, on TCP by its address. A caller not named gets 403
/// `caller-not-allowed` and nothing reaches the upstream.
@Suite(.serialized) struct CallersProxyTests {
    @Test func onAUnixSocketTheRouteServesTheUsersItNames() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let me = getuid()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ag-callers-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/proxy.sock"
        let group = try EventLoopGroup(loopCount: 1, name: "callers")
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .unix(path: path, mode: 0o600)), group: group,
            responder: ReverseProxy(routes: [
                ProxyRoute(
                    prefix: "/mine", upstream: UpstreamOrigin(upstream.url)!,
                    callers: CallerRule(uids: [me], gids: [], networks: [])),
                ProxyRoute(
                    prefix: "/theirs", upstream: UpstreamOrigin(upstream.url)!,
                    callers: CallerRule(uids: [me &+ 12_345], gids: [], networks: [CallerRule.Network("0.0.0.0/0")!])),
                ProxyRoute(
                    prefix: "/group", upstream: UpstreamOrigin(upstream.url)!,
                    callers: CallerRule(uids: [], gids: [getegid()], networks: [])),
            ]))
        try await server.listen()
        defer { group.shutdown() }
        let mine = try Stack.request(to: .unix(path: path, mode: 0o600), "GET", "/mine/inspect", headers: [], body: "")
        #expect(mine.status == 200)
        #expect(
            try Stack.request(to: .unix(path: path, mode: 0o600), "GET", "/group/inspect", headers: [], body: "").status == 200)
        // A body is left unread: the answer comes at once.
        let theirs = try Stack.request(
            to: .unix(path: path, mode: 0o600), "POST", "/theirs/inspect", headers: [], body: "payload")
        #expect(theirs.status == 403)
        #expect(theirs.header("content-type") == Problem.contentType)
        #expect(theirs.text.contains("caller-not-allowed"))
        #expect(upstream.responder.arrivals("/theirs/inspect") == 0)
    }

    /// Another user of the host, for real: as root, a client run as `nobody` on a socket every
    /// user may connect to is refused on a route that names root alone, and served on one that
    /// names `nobody`, or a supplementary group it is in.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
    func anotherUserOfTheHostIsToldApartByTheKernel() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let nobody = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let staff = try #require(getgrnam("staff")?.pointee.gr_gid)
        let directory = "/tmp/ag-callers-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/proxy.sock"
        let group = try EventLoopGroup(loopCount: 1, name: "callers")
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .unix(path: path, mode: 0o666)), group: group,
            responder: ReverseProxy(routes: [
                ProxyRoute(
                    prefix: "/root", upstream: UpstreamOrigin(upstream.url)!,
                    callers: CallerRule(uids: [0], gids: [], networks: [])
                ),
                ProxyRoute(
                    prefix: "/nobody", upstream: UpstreamOrigin(upstream.url)!,
                    callers: CallerRule(uids: [nobody], gids: [], networks: [])),
                ProxyRoute(
                    prefix: "/staff", upstream: UpstreamOrigin(upstream.url)!,
                    callers: CallerRule(uids: [], gids: [staff], networks: [])),
            ]))
        try await server.listen()
        defer { group.shutdown() }
        func statusAsNobody(_ target: String, supplementaryGroup: String? = nil) throws -> String {
            let script = """
                import socket,sys
                s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                s.sendall(b"GET " + sys.argv[2].encode() + b" HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
                print(s.recv(64).split(b" ")[1].decode())
                """
            let p = Subprocess()
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            let groups = supplementaryGroup.map { ["-g", "nogroup", "-G", $0] } ?? []
            p.arguments = ["-u", "nobody"] + groups + ["--", "python3", "-c", script, path, target]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            p.waitUntilExit()
            return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        #expect(try statusAsNobody("/root/inspect") == "403")
        #expect(try statusAsNobody("/nobody/inspect") == "200")
        // A group counts whether it is the caller's effective or a supplementary one.
        #expect(try statusAsNobody("/staff/inspect") == "403")
        #expect(try statusAsNobody("/staff/inspect", supplementaryGroup: "staff") == "200")
        #expect(upstream.responder.arrivals("/root/inspect") == 0)
        #expect(
            try Stack.request(to: .unix(path: path, mode: 0o666), "GET", "/root/inspect", headers: [], body: "").status == 200)
    }

    @Test func onTCPTheRouteServesTheNetworksItNames() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let proxy = try await Proxy(routes: [
            ProxyRoute(
                prefix: "/local", upstream: UpstreamOrigin(upstream.url)!,
                callers: CallerRule(uids: [], gids: [], networks: [CallerRule.Network("127.0.0.0/8")!])),
            ProxyRoute(
                prefix: "/cluster", upstream: UpstreamOrigin(upstream.url)!,
                callers: CallerRule(uids: [getuid()], gids: [getgid()], networks: [CallerRule.Network("10.0.0.0/8")!])),
        ])
        defer { proxy.stop() }
        #expect(try Stack.request(port: proxy.port, "GET", "/local/inspect", headers: [], body: "").status == 200)
        let refused = try Stack.request(port: proxy.port, "GET", "/cluster/inspect", headers: [], body: "")
        #expect(refused.status == 403 && refused.text.contains("caller-not-allowed"))
        #expect(upstream.responder.arrivals("/cluster/inspect") == 0)
    }

    /// `serve` with the proxy on a Unix socket: only who the socket's mode admits reaches it,
    /// and a route's users are told apart by the kernel.
    @Test func theGatewaysProxyListensOnAUnixSocket() async throws {
        try await Stack.run { stack in
            let path = stack.stateDirectory + "-proxy.sock"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let gateway = try await stack.startGateway { c in
                c.proxy = .init(unix: path, mode: "0600")
                c.routes.insert(
                    .init(prefix: "/others", upstream: c.routes[1].upstream, callers: .init(uids: [getuid() &+ 4_242])), at: 0)
            }
            #expect(try await stack.loginAlice().status == 200)
            #expect(gateway.proxyServer.address == .unix(path: path, mode: 0o600))
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let address = gateway.proxyServer.address
            let served = try await onThread { try Stack.request(to: address, "GET", "/me", headers: [], body: "") }
            #expect(served.status == 200)
            let refused = try await onThread { try Stack.request(to: address, "GET", "/others/me", headers: [], body: "") }
            #expect(refused.status == 403)
        }
    }

    /// On an authenticated route, a caller not named never gets the session's token: the
    /// request never leaves AuthGate. A route without callers serves everyone, as before.
    @Test func aCallerNotNamedNeverBorrowsTheSession() async throws {
        try await Stack.run { stack in
            try await stack.startGateway { c in
                c.routes.insert(
                    .init(prefix: "/guarded", upstream: c.routes[1].upstream, callers: .init(addresses: ["10.0.0.0/8"])), at: 0)
            }
            #expect(try await stack.loginAlice().status == 200)
            let before = stack.api.statistics
            let refused = try await stack.proxy("GET", "/guarded/me")
            #expect(refused.status == 403 && refused.text.contains("caller-not-allowed"))
            #expect(stack.api.statistics == before, "nothing reached the API")
            #expect(try await stack.proxy("GET", "/me").status == 200)
        }
    }
}
