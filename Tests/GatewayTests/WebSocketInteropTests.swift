import Foundation
import Gateway
import TestSupport
import Testing

/// WebSocket through an authenticated route, end to end with real peers: the PyPI
/// `websockets` echo server (scripts/websocket/echo_server.py) as the upstream, checking the
/// bearer token, and the `websockets` client (scripts/websocket/client.py) through the
/// in-process gateway on real sockets. The server answers the first handshake 401
/// `invalid_token`: the gateway refreshes once and retries, and the client never sees it.
@Suite(.serialized) struct WebSocketInteropTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `python3 script args`; its standard input stays open until `stop`.
    final class Python: @unchecked Sendable {
        // Safe: used from one test task only.
        let process = Subprocess()
        let input = Pipe()
        let output = Pipe()

        init(_ script: String, _ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", WebSocketInteropTests.repository.appendingPathComponent(script).path] + arguments
            process.standardInput = input
            process.standardOutput = output
            try process.run()
        }

        /// The first line printed.
        func firstLine() -> String {
            var line: [UInt8] = []
            let handle = output.fileHandleForReading
            while true {
                let byte = handle.readData(ofLength: 1)
                if byte.isEmpty || byte.first == 0x0A { break }
                line.append(byte.first!)
            }
            return String(decoding: line, as: UTF8.self)
        }

        /// Everything printed until the process ended (at most `seconds`; then it is killed).
        func finish(seconds: Double) -> (status: Int32, output: String) {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    static var websocketsInstalled: Bool {
        let p = Subprocess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import websockets"]
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    @Test(.enabled(if: websocketsInstalled, "needs PyPI websockets (scripts/install-deps installs it)"), .timeLimit(.minutes(3)))
    func aRealWebSocketClientTalksToARealServerThroughAnAuthenticatedRoute() async throws {
        let server = try Python("scripts/websocket/echo_server.py", ["--reject-first", "1"])
        defer { server.stop() }
        let upstreamPort = try #require(Int(server.firstLine()))
        try await Stack.run { stack in
            try await stack.startGateway { c in
                c.routes.insert(
                    .init(prefix: "/ws", upstream: "http://127.0.0.1:\(upstreamPort)", requiresAuthentication: true), at: 0)
                c.upgradeIdleTimeoutSeconds = 2
                c.loops = 1
            }
            #expect(try await stack.loginAlice().status == 200)
            let port = stack.proxyPort
            let (status, output) = try await onThread {
                // Under the sanitizers the gateway's side of a handshake can take longer than
                // the client's usual 10 s.
                let openTimeout = runsUnderSanitizer ? "30" : "10"
                let client = try Python(
                    "scripts/websocket/client.py",
                    ["--url", "ws://127.0.0.1:\(port)/ws", "--idle", "2", "--open-timeout", openTimeout])
                try? client.input.fileHandleForWriting.close()
                return client.finish(seconds: 150)
            }
            #expect(status == 0, "\(output)")
            for scenario in ["echo", "refresh-and-retry", "non-101", "server-closes", "client-closes", "idle-timeout"] {
                #expect(output.contains(#""scenario": "\#(scenario)", "ok": true"#), "\(scenario): \(output)")
            }
            // One refresh for the one rejected handshake, however many connections followed.
            #expect(await stack.authorization.statistics.refreshes == 1)
            // Upgrades are counted as requests answered 101 (status class 1xx).
            let metrics = String(decoding: try await stack.admin("GET", "/metrics").body, as: UTF8.self)
            let upgrades = metrics.split(separator: "\n").first {
                $0.hasPrefix("authgate_requests_total") && $0.contains(#"route_kind="authenticated""#)
                    && $0.contains(#"status_class="1xx""#)
            }
            #expect(upgrades.map { !$0.hasSuffix(" 0") } == true, "\(metrics)")
            // No token reaches a log.
            let logs = stack.logs.all
            for token in await stack.authorization.issuedSecrets.accessTokens { #expect(!logs.contains(token)) }
        }
    }
}
