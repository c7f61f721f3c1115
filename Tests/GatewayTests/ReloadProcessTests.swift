import Foundation
import Gateway
import Glibc
import Locking
import TestSupport
import Testing

/// `authgate serve` as a real process, reloaded by SIGHUP and `POST /auth/reload` while
/// clients keep sending requests through it: no request fails, a new route takes effect, a
/// rotated admin token replaces the old one, and an invalid configuration is refused with
/// its field named while the running one keeps serving.
@Suite(.serialized) struct ReloadProcessTests {
    /// The configuration file of `served`, edited and written back.
    static func rewrite(_ served: EventsCommandTests.Served, _ edit: (inout GatewayConfiguration) -> Void) throws {
        var c = try JSONDecoder().decode(GatewayConfiguration.self, from: Data(contentsOf: URL(fileURLWithPath: served.config)))
        edit(&c)
        try JSONEncoder().encode(c).write(to: URL(fileURLWithPath: served.config))
    }

    /// An admin call with `token`.
    static func admin(_ served: EventsCommandTests.Served, _ method: String, _ path: String, token: String) async throws
        -> TestResponse
    {
        let request =
            "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Length: 0\r\n\r\n"
        return try await onThread { [socket = served.socket] in
            let client = try RawClient(unixPath: socket)
            try client.send(request)
            return try client.readResponse()
        }
    }

    static func get(_ port: Int, _ path: String) throws -> TestResponse {
        let client = try RawClient(port: port)
        try client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        return try client.readResponse()
    }

    /// The proxy's port, from the `listening` log line.
    static func proxyPort(_ child: ChildProcess) async -> Int? {
        var port: Int?
        _ = await eventually {
            guard let range = child.errors.range(of: #""proxy.port":""#) else { return false }
            port = Int(child.errors[range.upperBound...].prefix { $0.isNumber })
            return port != nil
        }
        return port
    }

    @Test func reloadsUnderLoadLoseNoRequestAndApplyTheNewConfiguration() async throws {
        try await Stack.run { stack in
            let served = try EventsCommandTests.Served(stack)
            defer { served.remove() }
            let child = try ChildProcess(["serve", "--config", served.config, "--log-level", "info"])
            defer { child.stop() }
            guard await eventually({ (try? await served.admin("GET", "/readyz"))?.status == 200 }),
                let port = await Self.proxyPort(child)
            else {
                Issue.record("authgate serve did not start: \(child.errors)")
                return
            }
            try await served.login()
            #expect(try Self.get(port, "/fresh/public/x").text.contains(#""path":"/fresh/public/x""#))

            // Two clients, one request per connection, half on the authenticated route, until
            // the reloads are done (at most five minutes). A cap on the count would end the load
            // early on a fast machine, and the check that requests go on after the reloads with it.
            // A request with no answer is -1, and why (the client's error, the path and when)
            // goes to `failures`.
            let done = Locked(false)
            let sent = Locked(0)
            let failures = Locked<[String]>([])
            let began = ContinuousClock.now
            let load = Task {
                await onThreads(2) { _ -> [Int] in
                    var statuses: [Int] = []
                    while ContinuousClock.now - began < .seconds(300), !done.withLock({ $0 }) {
                        let path = statuses.count % 2 == 0 ? "/public/load" : "/data/load"
                        let asked = ContinuousClock.now
                        do {
                            statuses.append(try Self.get(port, path).status)
                        } catch {
                            statuses.append(-1)
                            let at = asked - began
                            let took = ContinuousClock.now - asked
                            failures.withLock { $0.append("\(path) asked at \(at), failed after \(took): \(error)") }
                        }
                        sent.withLock { $0 += 1 }
                    }
                    return statuses
                }
            }

            #expect(await eventually { sent.withLock { $0 } >= 20 })

            // 1. SIGHUP with a new route.
            try Self.rewrite(served) {
                $0.routes.insert(
                    .init(
                        prefix: "/fresh", upstream: "http://127.0.0.1:\(stack.apiServer.port)", stripPrefix: true,
                        requiresAuthentication: false), at: 0)
            }
            child.signal(SIGHUP)
            #expect(await eventually { (try? Self.get(port, "/fresh/public/x"))?.text.contains(#""path":"/public/x""#) == true })

            // 2. POST /auth/reload with a rotated admin token and new upstream timeouts (new clients).
            let rotated = "rotated-admin-token-9876543210"
            try Data((rotated + "\n").utf8).write(to: URL(fileURLWithPath: served.tokenFile))
            try Self.rewrite(served) { $0.upstreamTimeoutSeconds = 30 }
            let answer = try await Self.admin(served, "POST", "/auth/reload", token: Stack.adminToken)
            #expect(answer.status == 200, "\(answer.text)")
            let document = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any]
            #expect(document?["rotatedSecrets"] as? [String] == ["adminTokenFile"])
            #expect(document?["applied"] as? [String] == ["upstreamTimeoutSeconds"])
            #expect(try await Self.admin(served, "GET", "/auth/session", token: Stack.adminToken).status == 401)
            #expect(try await Self.admin(served, "GET", "/auth/session", token: rotated).status == 200)

            // 3. An invalid configuration: refused with the field named, by both ways in.
            try Self.rewrite(served) { $0.routes[0].upstream = "ftp://127.0.0.1:1" }
            let refused = try await Self.admin(served, "POST", "/auth/reload", token: rotated)
            #expect(refused.status == 422)
            #expect(refused.header("content-type") == "application/problem+json")
            #expect(refused.text.contains(#""field":"routes[0].upstream""#), "\(refused.text)")
            child.signal(SIGHUP)
            #expect(
                await eventually {
                    child.errors.contains("configuration reload refused")
                        && child.errors.contains(#""config.field":"routes[0].upstream""#)
                })
            #expect(try Self.get(port, "/fresh/public/x").text.contains(#""path":"/public/x""#))

            // 4. A field only a restart applies is reported, the rest applied.
            try Self.rewrite(served) {
                $0.routes[0].upstream = "http://127.0.0.1:\(stack.apiServer.port)"
                $0.maxConnections = 500
            }
            let partial = try await Self.admin(served, "POST", "/auth/reload", token: rotated)
            #expect(partial.status == 200, "\(partial.text)")
            let restart = (try JSONSerialization.jsonObject(with: Data(partial.text.utf8)) as? [String: Any])?["restartRequired"]
            #expect(restart as? [String] == ["maxConnections"])

            let before = sent.withLock { $0 }
            #expect(await eventually { sent.withLock { $0 } >= before + 20 })
            done.withLock { $0 = true }

            // 5. `authgate reload`, the client command: a summary, or the JSON; a refusal exits 1.
            let tokenFile = served.root + "/cli-token"
            try Data(rotated.utf8).write(to: URL(fileURLWithPath: tokenFile))
            let cli = ["reload", "--admin", served.admin, "--token-file", tokenFile]
            try Self.rewrite(served) { $0.maxReplays = 1 }
            let human = try ChildProcess(cli)
            #expect(await human.wait() == 0)
            #expect(human.output.contains("applied:          maxReplays"), "\(human.output)\(human.errors)")
            #expect(human.output.contains("restart required: maxConnections"))
            let json = try ChildProcess(cli + ["--json"])
            #expect(await json.wait() == 0)
            #expect(json.output.contains(#""applied":[]"#), "\(json.output)")
            try Self.rewrite(served) { $0.maxReplays = 11 }
            let refused3 = try ChildProcess(cli)
            #expect(await refused3.wait() == 1)
            #expect(refused3.output.contains(#""field":"maxReplays""#), "\(refused3.output)")
            #expect(try await Self.admin(served, "POST", "/auth/reload?session=default", token: rotated).status == 400)
            let statuses = await load.value.flatMap { $0 }
            #expect(statuses.count >= 40)
            #expect(child.errors.components(separatedBy: #""msg":"configuration reloaded""#).count - 1 == 5)
            #expect(
                statuses.allSatisfy { $0 == 200 },
                """
                statuses other than 200: \(Set(statuses)); \(failures.withLock { $0 }); log lines but access:
                \(child.errors.split(separator: "\n").filter { !$0.contains(#""msg":"access""#) }.joined(separator: "\n"))
                """)
            #expect(!child.errors.contains(rotated) && !child.errors.contains(Stack.adminToken))
            #expect(!child.errors.contains("s3cret"))

            // The access log, on by default in `serve`: one JSON line per proxied request, typed,
            // with no token in it.
            let access = child.errors.split(separator: "\n").filter { $0.contains(#""msg":"access""#) }
            #expect(access.count >= statuses.count)
            let line = access.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(line?["logger"] as? String == "authgate.access")
            #expect(line?["status"] as? Int == 200 && line?["bytesOut"] is Int && line?["durationMs"] is Double)
            for token in stack.api.seenTokens { #expect(!child.errors.contains(token)) }
        }
    }
}
