import AuthCore
import Foundation
import Locking
import Testing

@testable import Gateway

/// The `store` member of the session document: which store, which replica, who holds the lease.
@Suite struct StoreDocumentTests {
    struct Down: Error {}

    private func json(_ document: StoreDocument) throws -> [String: Any] {
        let data = try JSONEncoder().encode(document)
        return try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func theFileStoreNamesNoReplicaAndNoLease() async throws {
        let view = StoreView(kind: "file", isWritable: { false })
        let document = await view.document(for: .default)
        #expect(document == StoreDocument(kind: "file", replica: nil, reachable: false, lease: nil))
        let object = try json(document)
        #expect(Set(object.keys) == ["kind", "replica", "reachable", "lease"], "null members are written, not left out")
        #expect(object["replica"] is NSNull && object["lease"] is NSNull)
    }

    @Test func aSharedStoreNamesTheHolderAndWhetherItIsThisReplica() async throws {
        let asked = Locked<[String]>([])
        let view = StoreView(
            kind: "postgres", replica: "b/2/9",
            leaseHolder: { account in
                asked.withLock { $0.append(account.rawValue) }
                let remaining: Duration = account.rawValue == "default" ? .milliseconds(2_500) : .seconds(1)
                return (owner: account.rawValue == "default" ? "a/1/7" : "b/2/9", remaining: remaining)
            })
        let other = await view.document(for: .default)
        #expect(other.lease == StoreDocument.Lease(holder: "a/1/7", thisReplica: false, remaining: .milliseconds(2_500)))
        let object = try json(other)
        let lease = try #require(object["lease"] as? [String: Any])
        #expect(lease["holder"] as? String == "a/1/7")
        #expect(lease["this_replica"] as? Bool == false)
        #expect(lease["expires_in_seconds"] as? Double == 2.5)
        #expect(object["replica"] as? String == "b/2/9" && object["reachable"] as? Bool == true)
        #expect(await view.document(for: AccountID("ops")).lease?.thisReplica == true)
        #expect(asked.withLock { $0 } == ["default", "ops"], "the lease is asked for the session's own account")
    }

    @Test func noRefreshInFlightIsANullLease() async throws {
        let view = StoreView(kind: "postgres", replica: "b/2/9", leaseHolder: { _ in nil })
        #expect(
            await view.document(for: .default) == StoreDocument(kind: "postgres", replica: "b/2/9", reachable: true, lease: nil))
    }

    @Test func aDatabaseThatDoesNotAnswerIsUnreachableNotAnError() async throws {
        let view = StoreView(kind: "postgres", replica: "b/2/9", leaseHolder: { _ in throw Down() })
        #expect(
            await view.document(for: .default) == StoreDocument(kind: "postgres", replica: "b/2/9", reachable: false, lease: nil))
    }
}
