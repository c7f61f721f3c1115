import AuthGateTesting
import Foundation
import Gateway
import Locking
import TestSupport
import Testing

/// `/readyz` sees what would lose the session at the next restart: a state directory
/// without room, and a rotated pair held only in memory after its save failed.
@Suite struct ReadinessTests {
    static let ready = Readiness.Inputs(
        restored: true, writable: true, freeBytes: 1 << 30, unsavedCredentials: false, userInfoPending: false)

    @Test func everyInputDecidesItsOwnReasonInOrder() {
        #expect(Readiness.decide(Self.ready) == nil)
        var i = Self.ready
        i.freeBytes = nil
        #expect(Readiness.decide(i) == nil, "an unknown free space is not a reason")
        i.freeBytes = Readiness.minimumFreeBytes
        #expect(Readiness.decide(i) == nil)
        i.freeBytes = Readiness.minimumFreeBytes - 1
        #expect(Readiness.decide(i) == .stateDirectoryFull)
        i = Self.ready
        i.clientCertificateOutdated = true
        #expect(Readiness.decide(i) == .clientCertificateOutdated)
        #expect(Readiness.Reason.clientCertificateOutdated.rawValue == "client_certificate_outdated")
        i.clientCredentialsUnusable = true
        #expect(Readiness.decide(i) == .clientCredentialsUnusable)
        i.userInfoPending = true
        #expect(Readiness.decide(i) == .clientCredentialsUnusable, "no refresh is possible: graver than a pending call")
        i.unsavedCredentials = true
        #expect(Readiness.decide(i) == .credentialsNotSaved)
        i.userInfoPending = true
        #expect(Readiness.decide(i) == .credentialsNotSaved, "the graver reason comes first")
        i.freeBytes = 0
        #expect(Readiness.decide(i) == .stateDirectoryFull)
        i.writable = false
        #expect(Readiness.decide(i) == .stateDirectoryNotWritable)
        i.restored = false
        #expect(Readiness.decide(i) == .sessionNotRestored)
    }

    @Test func aSharedStoreThatDoesNotAnswerIsNamedAsTheStore() {
        var i = Self.ready
        i.sharedStore = true
        #expect(Readiness.decide(i) == nil)
        i.writable = false
        #expect(Readiness.decide(i) == .storeUnavailable, "PostgreSQL down is not a state directory problem")
        #expect(Readiness.Reason.storeUnavailable.rawValue == "store_unavailable")
        i.restored = false
        #expect(Readiness.decide(i) == .sessionNotRestored)
    }

    @Test func aProbeAsksEveryInputAfresh() {
        let free = Locked(Int?.some(1 << 30))
        let unsaved = Locked(false)
        let r = Readiness(
            storesWritable: { true }, freeBytes: { free.withLock { $0 } }, unsavedCredentials: { unsaved.withLock { $0 } })
        r.restored(true)
        #expect(r.check().ready)
        free.withLock { $0 = 4096 }
        #expect(r.check().reason == .stateDirectoryFull)
        free.withLock { $0 = 1 << 30 }
        unsaved.withLock { $0 = true }
        #expect(r.check().reason == .credentialsNotSaved)
        unsaved.withLock { $0 = false }
        #expect(r.check().ready)
    }

    @Test func aRotatedPairThatCannotBeSavedMakesTheGatewayNotReadyUntilItIs() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
            // The sealed file's place is taken by a non-empty directory: the directory stays
            // writable, but no save can replace the file.
            let files = try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory)
            let name = try #require(files.first { $0.hasPrefix("tokens-") && $0.hasSuffix(".sealed") })
            let sealed = stack.stateDirectory + "/" + name
            try FileManager.default.removeItem(atPath: sealed)
            try FileManager.default.createDirectory(atPath: sealed + "/blocker", withIntermediateDirectories: true)
            await stack.authorization.revokeAccessTokens()
            // The request is served with the rotated token, held only in memory.
            #expect(try await stack.proxy("GET", "/data").status == 200)
            let ready = try await stack.admin("GET", "/readyz", token: nil)
            #expect(ready.status == 503)
            #expect(ready.text.contains(#""reason":"credentials_not_saved""#))
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_unsaved_credentials{session="default"} 1"#))
            #expect(metrics.contains("authgate_state_directory_free_bytes "))
            // The login's body is held until its connection has written its answer and closed,
            // which can come just after the client has read that answer.
            #expect(
                try await eventually {
                    try await stack.admin("GET", "/metrics").text.contains("authgate_buffered_request_bytes 0")
                })
            // Room again: the next request's save goes through (after the retry backoff).
            try FileManager.default.removeItem(atPath: sealed)
            let saved = try await eventually {
                _ = try await stack.proxy("GET", "/data")
                return try await stack.admin("GET", "/readyz", token: nil).status == 200
            }
            #expect(saved)
            #expect(FileManager.default.fileExists(atPath: sealed))
            #expect(try await stack.admin("GET", "/metrics").text.contains(#"authgate_unsaved_credentials{session="default"} 0"#))
        }
    }
}
