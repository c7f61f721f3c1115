import Foundation
import Gateway
import Runtime
import Testing

/// The listeners in the configuration: TCP or a Unix socket for the admin API, the probe
/// listener, and the admin token turned off only where nobody else can call.
@Suite struct ListenerConfigurationTests {

    @Test func theAdminAPICanListenOnAUnixSocketWithAMode() throws {
        let c = try GatewayConfigurationTests.load { $0["admin"] = ["unix": "/run/authgate/admin.sock", "mode": "0660"] }
        #expect(c.admin == .init(unix: "/run/authgate/admin.sock", mode: "0660"))
        #expect(try c.admin.address(at: "admin") == .unix(path: "/run/authgate/admin.sock", mode: 0o660))
        // Owner only unless said otherwise.
        let plain = try GatewayConfigurationTests.load { $0["admin"] = ["unix": "/run/authgate/admin.sock"] }
        #expect(try plain.admin.address(at: "admin") == .unix(path: "/run/authgate/admin.sock", mode: 0o600))
        #expect(try GatewayConfigurationTests.load { _ in }.admin.address(at: "admin") == .tcp(host: "127.0.0.1", port: 8081))
    }

    @Test func aListenerIsEitherHostAndPortOrUnix() {
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["host": "127.0.0.1", "port": 8081, "unix": "/run/a.sock"] }
                == "admin: set either host and port, or unix, not both")
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["port": 8081, "unix": "/run/a.sock"] }
                == "admin: set either host and port, or unix, not both")
        #expect(GatewayConfigurationTests.error { $0["admin"] = [String: Any]() } == "admin: set host and port, or unix")
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["host": "127.0.0.1"] } == "admin.port is required with admin.host")
        #expect(GatewayConfigurationTests.error { $0["admin"] = ["port": 8081] } == "admin.host is required with admin.port")
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["host": "127.0.0.1", "port": 8081, "mode": "0600"] }
                == "admin.mode is only for a Unix socket (admin.unix)")
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["unix": "/run/a.sock", "modes": "0600"] }
                == "unknown field admin.modes")
    }

    @Test func theSocketPathIsAbsoluteAndFitsSunPath() {
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["unix": "run/admin.sock"] } == "admin.unix must be an absolute path")
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["unix": "/run/authgate/"] }
                == "admin.unix must name a socket file, not a directory")
        let longest = "/run/" + String(repeating: "a", count: ListenAddress.maxUnixPathBytes - 5)
        #expect(longest.utf8.count == 107)
        #expect(GatewayConfigurationTests.error { $0["admin"] = ["unix": longest] } == nil)
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["unix": longest + "a"] }
                == "admin.unix is 108 bytes long; a socket path has at most 107")
    }

    @Test func theModeIsOctalAtMost0777AndNeverLetsOthersIn() {
        #expect(GatewayConfiguration.Listener.parseMode("0600") == 0o600)
        #expect(GatewayConfiguration.Listener.parseMode("660") == 0o660)
        #expect(GatewayConfiguration.Listener.parseMode("0777") == 0o777)
        for bad in ["", "06600", "1777", "4755", "0800", "rw", "0x1ff", "-600", " 600"] {
            #expect(GatewayConfiguration.Listener.parseMode(bad) == nil, "\(bad)")
        }
        for bad in ["1777", "0888", "u+rw", "06600"] {
            #expect(
                GatewayConfigurationTests.error { $0["admin"] = ["unix": "/run/a.sock", "mode": bad] }?.hasPrefix(
                    "admin.mode must be octal digits") == true,
                "\(bad)")
        }
        for open in ["0666", "0602", "0601", "0777"] {
            #expect(
                GatewayConfigurationTests.error { $0["admin"] = ["unix": "/run/a.sock", "mode": open] }
                    == "admin.mode \(open) lets others connect; its last digit must be 0 (such as \"0600\" or \"0660\")")
        }
        #expect(GatewayConfigurationTests.error { $0["admin"] = ["unix": "/run/a.sock", "mode": "0660"] } == nil)
        #expect(GatewayConfigurationTests.error { $0["admin"] = ["unix": "/run/a.sock", "mode": "0600"] } == nil)
    }

    @Test func theAdminTokenCanBeTurnedOffOnAnOwnerOnlySocketOnly() {
        func off(_ c: inout [String: Any], _ admin: [String: Any]) {
            c["admin"] = admin
            c["adminTokenFile"] = nil
            c["adminTokenDisabled"] = true
        }
        #expect(GatewayConfigurationTests.error { off(&$0, ["unix": "/run/a.sock", "mode": "0600"]) } == nil)
        #expect(GatewayConfigurationTests.error { off(&$0, ["unix": "/run/a.sock"]) } == nil)
        #expect(
            GatewayConfigurationTests.error { off(&$0, ["unix": "/run/a.sock", "mode": "0660"]) }
                == "adminTokenDisabled: true with admin.unix needs admin.mode 0600 (owner only): "
                + "anyone the mode admits would call the admin API without a token")
        #expect(
            GatewayConfigurationTests.error { off(&$0, ["unix": "/run/a.sock", "mode": "0620"]) }?.hasPrefix("adminTokenDisabled")
                == true)
        // TCP as before: loopback only.
        #expect(GatewayConfigurationTests.error { off(&$0, ["host": "127.0.0.1", "port": 8081]) } == nil)
        #expect(
            GatewayConfigurationTests.error { off(&$0, ["host": "0.0.0.0", "port": 8081]) }?.hasPrefix("adminTokenDisabled")
                == true)
    }

    /// The proxy may listen on a Unix socket, so that only the users and groups its mode
    /// admits reach it (and a route can name them: `routes[].callers`); the same rules as the
    /// admin socket's.
    @Test func theProxyMayListenOnAUnixSocket() {
        #expect(GatewayConfigurationTests.error { $0["proxy"] = ["unix": "/run/authgate/proxy.sock", "mode": "0660"] } == nil)
        #expect(
            GatewayConfigurationTests.error { $0["proxy"] = ["unix": "/run/authgate/proxy.sock", "mode": "0666"] }?
                .hasPrefix("proxy.mode") == true)
    }

    @Test func theProbeListenerIsOptionalAndValidatedLikeTheOthers() throws {
        #expect(try GatewayConfigurationTests.load { _ in }.probes == nil)
        let c = try GatewayConfigurationTests.load { $0["probes"] = ["host": "0.0.0.0", "port": 8082] }
        #expect(c.probes == .init(host: "0.0.0.0", port: 8082))
        #expect(c.listeners.map(\.field) == ["proxy", "admin", "probes"])
        #expect(
            GatewayConfigurationTests.error { $0["probes"] = ["host": "0.0.0.0", "port": 70000] } == "probes.port must be 0…65535"
        )
        #expect(
            GatewayConfigurationTests.error { $0["probes"] = ["host": "0.0.0.0"] } == "probes.port is required with probes.host")
        #expect(
            GatewayConfigurationTests.error { $0["probes"] = ["host": "0.0.0.0", "port": 8082, "unix": "/run/p.sock"] }
                == "probes: set either host and port, or unix, not both")
        #expect(
            GatewayConfigurationTests.error { $0["probes"] = ["host": "0.0.0.0", "port": 8082, "token": "x"] }
                == "unknown field probes.token")
    }

    @Test func theMetricsListenerIsOptionalAndValidatedLikeTheOthers() throws {
        #expect(try GatewayConfigurationTests.load { _ in }.metrics == nil)
        let c = try GatewayConfigurationTests.load {
            $0["probes"] = ["host": "0.0.0.0", "port": 8082]
            $0["metrics"] = ["host": "0.0.0.0", "port": 9090]
        }
        #expect(c.metrics == .init(host: "0.0.0.0", port: 9090))
        #expect(c.listeners.map(\.field) == ["proxy", "admin", "probes", "metrics"])
        #expect(
            GatewayConfigurationTests.error { $0["metrics"] = ["host": "0.0.0.0"] }
                == "metrics.port is required with metrics.host")
        #expect(
            GatewayConfigurationTests.error { $0["metrics"] = ["host": "localhost", "port": 9090] }?.hasPrefix(
                "metrics.host must be an IPv4 or IPv6 address") == true)
        #expect(
            GatewayConfigurationTests.error { $0["metrics"] = ["host": "0.0.0.0", "port": 9090, "token": "x"] }
                == "unknown field metrics.token")
        #expect(
            GatewayConfigurationTests.error {
                $0["probes"] = ["host": "0.0.0.0", "port": 8082]
                $0["metrics"] = ["host": "0.0.0.0", "port": 8082]
            } == "metrics.port is also probes.port")
        #expect(
            GatewayConfigurationTests.error { $0["metrics"] = ["unix": "/run/m.sock", "mode": "0666"] }?.hasPrefix(
                "metrics.mode 0666 lets others connect") == true)
    }

    @Test func noTwoListenersShareAPortOrASocket() {
        // SO_REUSEPORT would let both bind, and split the port's connections between them.
        #expect(
            GatewayConfigurationTests.error { $0["probes"] = ["host": "0.0.0.0", "port": 8081] }
                == "probes.port is also admin.port")
        #expect(
            GatewayConfigurationTests.error { $0["admin"] = ["host": "::1", "port": 8080] } == "admin.port is also proxy.port")
        #expect(
            GatewayConfigurationTests.error {
                $0["admin"] = ["unix": "/run/a.sock"]
                $0["probes"] = ["unix": "/run/a.sock"]
            } == "probes.unix is also admin.unix")
        // Port 0 picks a free port each time.
        #expect(
            GatewayConfigurationTests.error {
                $0["proxy"] = ["host": "127.0.0.1", "port": 0]
                $0["admin"] = ["host": "127.0.0.1", "port": 0]
            } == nil)
    }

    @Test func theSocketDirectoryMustExist() throws {
        let c = try GatewayConfigurationTests.load { $0["admin"] = ["unix": "/nonexistent-authgate-dir/admin.sock"] }
        #expect(
            throws: GatewayError(
                .unusablePath, field: "admin.unix", "admin.unix: the directory /nonexistent-authgate-dir does not exist")
        ) {
            try c.checkListenerDirectories()
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("agl-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let here = try GatewayConfigurationTests.load { $0["admin"] = ["unix": dir + "/admin.sock"] }
        try here.checkListenerDirectories()
        // A file is not a directory.
        let file = try GatewayConfigurationTests.load { $0["admin"] = ["unix": dir + "/admin.sock/x.sock"] }
        #expect(FileManager.default.createFile(atPath: dir + "/admin.sock", contents: Data()))
        #expect(throws: GatewayError.self) { try file.checkListenerDirectories() }
        // TCP listeners have no directory to check.
        var asked: [String] = []
        try GatewayConfigurationTests.load { _ in }.checkListenerDirectories {
            asked.append($0)
            return false
        }
        #expect(asked.isEmpty)
    }

    @Test func anAdminEndpointIsAURLOrAUnixSocket() throws {
        let socket = try AdminEndpoint(parsing: "unix:/run/authgate/admin.sock")
        #expect(socket.unixSocketPath == "/run/authgate/admin.sock")
        #expect(socket.url("/auth/session") == "http://localhost/auth/session")
        #expect(socket.curlArguments("/auth/events") == "--unix-socket /run/authgate/admin.sock http://localhost/auth/events")
        let tcp = try AdminEndpoint(parsing: "http://127.0.0.1:8081/")
        #expect(tcp.unixSocketPath == nil)
        #expect(tcp.url("/auth/session") == "http://127.0.0.1:8081/auth/session")
        #expect(tcp.curlArguments("/auth/events") == "http://127.0.0.1:8081/auth/events")
        for bad in ["unix:run/admin.sock", "unix:", "unix:/run/authgate/", "127.0.0.1:8081", "ftp://x", "http://x/?q=1"] {
            #expect(throws: GatewayError.self, "\(bad)") { try AdminEndpoint(parsing: bad) }
        }
        #expect(throws: GatewayError.self) { try AdminEndpoint(parsing: "unix:/" + String(repeating: "a", count: 107)) }
    }
}
