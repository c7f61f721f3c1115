import Foundation
import Gateway
import Glibc
import TestSupport
import Testing

/// `authgate events` and `authgate status` as real processes against `authgate serve`, a
/// real process too, in front of the fake authorization server and API of a `Stack`.
@Suite(.serialized) struct EventsCommandTests {
    /// A scratch directory with `authgate serve`'s configuration and secret files, its
    /// admin API on a Unix socket there (so that a restart listens where it did, and no
    /// other test's listener can take its place meanwhile).
    struct Served {
        let root: String
        let config: String
        let socket: String
        let tokenFile: String
        /// `--admin` for the client commands.
        var admin: String { "unix:\(socket)" }

        init(_ stack: Stack) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("ag-events-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(
                atPath: root + "/state", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            tokenFile = root + "/admin-token"
            try Data((Stack.adminToken + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
            try Data("s3cret".utf8).write(to: URL(fileURLWithPath: root + "/client-secret"))
            socket = root + "/admin.sock"
            var c = stack.configuration
            c.admin = .init(unix: socket)
            c.adminTokenFile = tokenFile
            c.authorization.clientSecretFile = root + "/client-secret"
            c.stateDirectory = root + "/state"
            c.keyFile = root + "/state/store.key"
            c.loops = 1
            config = root + "/authgate.json"
            try JSONEncoder().encode(c).write(to: URL(fileURLWithPath: config))
        }

        /// Starts `authgate serve` and waits until its admin API answers `/readyz` 200.
        func serve() async throws -> ChildProcess {
            let child = try ChildProcess(["serve", "--config", config, "--log-level", "warning"])
            let ready = await eventually { (try? await admin("GET", "/readyz"))?.status == 200 }
            if !ready {
                child.stop()
                throw NotReady(errors: child.errors)
            }
            return child
        }

        struct NotReady: Error { var errors: String }

        /// An admin API call with the token.
        func admin(_ method: String, _ path: String, json: String = "") async throws -> TestResponse {
            var headers = ["Authorization: Bearer \(Stack.adminToken)"]
            if !json.isEmpty { headers.append("Content-Type: application/json") }
            var request = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            for h in headers { request += h + "\r\n" }
            request += "Content-Length: \(json.utf8.count)\r\n\r\n" + json
            return try await onThread { [socket, request] in
                let client = try RawClient(unixPath: socket)
                try client.send(request)
                return try client.readResponse()
            }
        }

        func login() async throws {
            let r = try await admin(
                "POST", "/auth/login", json: #"{"grant_type":"password","username":"alice","password":"wonderland"}"#)
            #expect(r.status == 200, "\(r.text)")
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    /// The `--json` lines so far, decoded: (id, type, generation).
    static func events(_ child: ChildProcess) -> [(id: UInt64, type: String, generation: UInt64?)] {
        child.lines.compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let id = (o["id"] as? NSNumber)?.uint64Value, let type = o["type"] as? String
            else { return nil }
            return (id, type, (o["generation"] as? NSNumber)?.uint64Value)
        }
    }

    func withServed(_ body: (Stack, Served) async throws -> Void) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ChildProcess.binary), "build the authgate product first")
        try await Stack.run { stack in
            let served = try Served(stack)
            defer { served.remove() }
            try await body(stack, served)
        }
    }

    @Test func eventsResumeAfterACutConnectionWithNothingLostOrRepeated() async throws {
        try await withServed { stack, served in
            let gateway = try await served.serve()
            defer { gateway.stop() }
            let relay = try TCPRelay(toUnix: served.socket)
            defer { relay.close() }
            let events = try ChildProcess(
                ["events", "--admin", "http://127.0.0.1:\(relay.port)", "--json"],
                environment: ["AUTHGATE_ADMIN_TOKEN": Stack.adminToken])
            defer { events.stop() }
            #expect(await eventually { Self.events(events).map(\.type) == ["state"] }, "\(events.output)\(events.errors)")
            try await served.login()
            #expect(await eventually { Self.events(events).map(\.type) == ["state", "logged_in"] }, "\(events.output)")
            // The connection is cut and, while the client cannot reconnect, two refreshes
            // happen: it must get both once it is back, after the login it saw, and once.
            relay.refuse(true)
            relay.cut()
            #expect(await eventually { events.errors.contains("connection lost") }, "\(events.errors)")
            for _ in 0..<2 { #expect(try await served.admin("POST", "/auth/refresh").status == 200) }
            relay.refuse(false)
            #expect(
                await eventually { Self.events(events).count >= 4 }, "\(events.output)\n\(events.errors)")
            _ = try await served.admin("POST", "/auth/logout")
            #expect(await eventually { Self.events(events).count >= 5 }, "\(events.output)")
            let seen = Self.events(events)
            #expect(seen.map(\.type) == ["state", "logged_in", "refreshed", "refreshed", "logged_out"], "\(events.output)")
            #expect(seen.compactMap(\.generation) == [2, 3])
            #expect(zip(seen.dropFirst(), seen.dropFirst(2)).allSatisfy { $0.id + 1 == $1.id }, "consecutive ids: \(seen)")
            #expect(events.errors.contains("reconnected, resuming after event \(seen[1].id)"), "\(events.errors)")
            // Ctrl-C: status 0, nothing but the connection notices on standard error.
            events.signal(SIGINT)
            #expect(await events.wait() == 0)
            #expect(!events.errors.contains("Fatal") && !events.errors.contains("Stack dump"), "\(events.errors)")
            #expect(!events.output.contains(Stack.adminToken) && !events.errors.contains(Stack.adminToken))
        }
    }

    @Test func eventsFollowTheGatewayThroughARestart() async throws {
        try await withServed { stack, served in
            var gateway = try await served.serve()
            let relay = try TCPRelay(toUnix: served.socket)
            defer { relay.close() }
            let events = try ChildProcess(
                ["events", "--admin", "http://127.0.0.1:\(relay.port)"], environment: ["AUTHGATE_ADMIN_TOKEN": Stack.adminToken])
            defer { events.stop() }
            #expect(await eventually { events.lines.count == 1 }, "\(events.output)\(events.errors)")
            try await served.login()
            #expect(await eventually { events.lines.count == 2 }, "\(events.output)")
            // The gateway stops (SIGTERM) and starts again over the same state directory,
            // and has more events (two refreshes) than the last run had by the time the client
            // is back: the client is told the state now, once, not this run's events from
            // the place its Last-Event-ID of the last run would point at.
            relay.refuse(true)
            gateway.signal(SIGTERM)
            #expect(await gateway.wait() == 0)
            gateway = try await served.serve()
            defer { gateway.stop() }
            for _ in 0..<2 { #expect(try await served.admin("POST", "/auth/refresh").status == 200) }
            relay.refuse(false)
            #expect(await eventually { events.lines.count == 3 }, "\(events.output)\n\(events.errors)")
            _ = try await served.admin("POST", "/auth/logout")
            #expect(await eventually { events.lines.count == 4 }, "\(events.output)")
            let lines = events.lines
            #expect(lines[0].hasSuffix("[default] state: logged_out"), "\(lines)")
            #expect(lines[1].contains("[default] logged_in: as alice, token generation 1, expires "), "\(lines)")
            #expect(lines[2].contains("[default] state: logged_in as alice, token generation 3"), "\(lines)")
            #expect(lines[3].contains("[default] logged_out: user_initiated"), "\(lines)")
            #expect(events.errors.contains("connection lost"), "\(events.errors)")
            events.signal(SIGTERM)
            #expect(await events.wait() == 0)
        }
    }

    @Test func eventsEndQuietlyWhenTheirReaderGoesAway() async throws {
        try await withServed { stack, served in
            let gateway = try await served.serve()
            defer { gateway.stop() }
            // `authgate events | head -1`: the second event's write meets a closed pipe.
            let process = Subprocess()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [
                "-c", #"\#(ChildProcess.binary) events --admin "$1" | head -1; exit "${PIPESTATUS[0]}""#, "sh", served.admin,
            ]
            process.environment = ["AUTHGATE_ADMIN_TOKEN": Stack.adminToken, "PATH": "/usr/bin:/bin"]
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            // Up to the first line only: bash keeps the pipe open while `authgate events` runs.
            let firstLine = try await onThread {
                var data = Data()
                while !data.contains(UInt8(ascii: "\n")) {
                    let more = out.fileHandleForReading.availableData
                    if more.isEmpty { break }
                    data += more
                }
                return data
            }
            #expect(String(decoding: firstLine, as: UTF8.self).contains("state: logged_out"))
            try await served.login()
            let errors = try await onThread { String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(errors)")
            #expect(!errors.contains("Fatal error") && !errors.contains("crashed"), "\(errors)")
        }
    }

    @Test func eventsStopWithStatus1WhenTheAdminAPIRefusesThem() async throws {
        try await withServed { stack, served in
            let gateway = try await served.serve()
            defer { gateway.stop() }
            let wrong = try ChildProcess(
                ["events", "--admin", served.admin], environment: ["AUTHGATE_ADMIN_TOKEN": "not-the-token"])
            #expect(await wrong.wait() == 1)
            #expect(wrong.errors.contains("401") && wrong.errors.contains("admin-token-required"), "\(wrong.errors)")
            #expect(!wrong.errors.contains("not-the-token"))
            let unknown = try ChildProcess(
                ["events", "--admin", served.admin, "--session", "nope", "--token-file", served.tokenFile])
            #expect(await unknown.wait() == 1)
            #expect(unknown.errors.contains("unknown-session"), "\(unknown.errors)")
            let nowhere = try ChildProcess(
                ["events", "--admin", "unix:\(served.root)/nothing.sock", "--token-file", served.tokenFile])
            #expect(await nowhere.wait() == 1)
            #expect(nowhere.errors.contains("the admin API cannot be reached"), "\(nowhere.errors)")
            let bad = try ChildProcess(["events", "--last-event-id", "x1"])
            #expect(await bad.wait() == 64)
            #expect(bad.errors.contains("--last-event-id must be an event id"), "\(bad.errors)")
        }
    }

    /// The device login follows the events before it starts the login: when the admin API
    /// refuses the events, the command says why and stops, rather than wait for a first event
    /// that never comes.
    @Test func aDeviceLoginWhoseEventsAreRefusedStopsWithStatus1() async throws {
        try await withServed { stack, served in
            let gateway = try await served.serve()
            defer { gateway.stop() }
            let wrong = try ChildProcess(
                ["login", "--grant", "device", "--admin", served.admin],
                environment: ["AUTHGATE_ADMIN_TOKEN": "not-the-token"])
            #expect(await wrong.wait(timeout: .seconds(30)) == 1, "\(wrong.errors)")
            #expect(wrong.errors.contains("401") && wrong.errors.contains("admin-token-required"), "\(wrong.errors)")
            #expect(!wrong.errors.contains("not-the-token"))
            let nowhere = try ChildProcess(
                ["login", "--grant", "device", "--admin", "unix:\(served.root)/nothing.sock", "--token-file", served.tokenFile])
            #expect(await nowhere.wait(timeout: .seconds(30)) == 1, "\(nowhere.errors)")
            #expect(nowhere.errors.contains("the admin API cannot be reached"), "\(nowhere.errors)")
        }
    }

    @Test func statusIsASummaryForPeopleAndJSONForScripts() async throws {
        try await withServed { stack, served in
            let gateway = try await served.serve()
            defer { gateway.stop() }
            let admin = ["--admin", served.admin, "--token-file", served.tokenFile]
            let out = try ChildProcess(["status"] + admin)
            #expect(await out.wait() == 0)
            #expect(out.output.hasPrefix("session default: logged out\n"), "\(out.output)")
            try await served.login()
            let human = try ChildProcess(["status"] + admin)
            #expect(await human.wait() == 0)
            let lines = human.lines
            #expect(lines.first == "session default: logged in as alice", "\(human.output)")
            #expect(
                lines.contains {
                    $0.hasPrefix("  token:      generation 1, expires ")
                        && ($0.hasSuffix(" (in 60 min)") || $0.hasSuffix(" (in 59 min)"))
                }, "\(human.output)")
            let json = try ChildProcess(["status", "--json"] + admin)
            #expect(await json.wait() == 0)
            let document = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
            #expect(document?["state"] as? String == "logged_in")
            #expect(document?["subject"] as? String == "alice")
            let wrong = try ChildProcess(["status", "--admin", served.admin], environment: ["AUTHGATE_ADMIN_TOKEN": "x"])
            #expect(await wrong.wait() == 1)
            #expect(wrong.output.contains("admin-token-required"))
        }
    }
}
