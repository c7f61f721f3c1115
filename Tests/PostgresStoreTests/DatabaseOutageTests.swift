import AuthCore
import AuthGateTesting
import Foundation
import Glibc
import TestSupport
import Testing

@testable import PostgresStore

/// PostgreSQL stopped and started under a running replica. It stops the shared server, so
/// it runs alone: `make postgres` runs it in a second pass with
/// `AUTHGATE_TEST_POSTGRES_OUTAGE=1`.
@Suite(
    TestDatabase.required,
    .enabled(
        if: ProcessInfo.processInfo.environment["AUTHGATE_TEST_POSTGRES_OUTAGE"] == "1",
        "stops the shared PostgreSQL: runs alone with AUTHGATE_TEST_POSTGRES_OUTAGE=1 (make postgres does)"))
struct DatabaseOutageTests {
    /// `pg_ctl start|stop` on the test server, as the user it runs as.
    static func pgCtl(_ action: String) throws {
        let env = ProcessInfo.processInfo.environment
        let bin = try #require(env["AUTHGATE_TEST_POSTGRES_BIN"])
        let data = try #require(env["AUTHGATE_TEST_POSTGRES_DATA"])
        let prefix = (env["AUTHGATE_TEST_POSTGRES_RUN_AS"] ?? "").split(separator: " ").map(String.init)
        var arguments = prefix + [bin + "/pg_ctl", "-D", data, "-w", "-t", "60"]
        arguments += action == "stop" ? ["-m", "fast", "stop"] : ["-l", data + "/../server.log", "start"]
        // posix_spawn and waitpid, not Foundation's Process: the server pg_ctl starts keeps
        // descriptors Process watches for the child's exit, and its wait never returns.
        let argv = ["/usr/bin/env"] + arguments
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { for a in cArgs { free(a) } }
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
        try #require(spawned == 0, "posix_spawn pg_ctl: \(spawned)")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        #expect(status == 0, "pg_ctl \(action): status \(status)")
    }

    @Test func aReplicaServesItsCachedTokenThroughAnOutageAndRecoversWithoutRestart() async throws {
        let r = try await Replicas(2, terms: .init(term: .seconds(2), maximumWait: .seconds(3)))
        let first = try await r.loginEverywhere()
        r.follow()
        try Self.pgCtl("stop")
        do {
            // Not yet due: served from memory, no database needed.
            #expect(try await r.actors[1].token().value == first.value)
            // Due: the lease cannot be had; the session is kept, the caller told to retry.
            r.clock.advance(by: .seconds(3600))
            do {
                _ = try await r.actors[1].refresh(after: first.generation)
                Issue.record("refreshed without the database")
            } catch let error as AuthError {
                #expect(error.code == .refreshFailed)
                #expect(error.retryAfter != nil)
            }
            #expect(await r.actors[1].status.isLoggedIn)
            #expect(await r.server.statistics.refreshes == 0)
            #expect(await eventually { !r.stores[1].isReachable }, "/readyz would still say ready")
        } catch {
            try Self.pgCtl("start")
            throw error
        }
        try Self.pgCtl("start")
        #expect(await eventually(timeout: .seconds(20)) { r.stores[1].isReachable })
        // Back: the next refresh goes through (after the backoff), once, and the other replica adopts it.
        var refreshed: AccessToken?
        #expect(
            await eventually(timeout: .seconds(20)) {
                r.clock.advance(by: .seconds(1))
                refreshed = try? await r.actors[1].refresh(after: first.generation)
                return refreshed != nil
            })
        #expect(refreshed?.value != first.value)
        #expect(await eventually { (try? await r.actors[0].token().value) == refreshed?.value })
        #expect(await r.server.statistics.refreshes == 1)
        #expect(await r.server.statistics.reuseDetections == 0)
        await r.close()
    }
}
