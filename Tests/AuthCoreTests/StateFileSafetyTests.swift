import Foundation
import Locking
import Testing

@testable import AuthCore

#if canImport(Glibc)
    import Glibc
#endif

/// Key creation that two processes can race, and temporary files a crash left behind.
@Suite struct StateFileSafetyTests {
    func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "authcore-\(UUID().uuidString)"
        mkdir(path, 0o700)
        return path
    }

    @Test func concurrentKeyCreatorsAllEndWithTheSameKey() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for round in 0..<20 {
            let path = "\(directory)/store-\(round).key"
            let creators = 8
            let ids = Locked<[[UInt8]]>([])  // a pthread mutex: ThreadSanitizer sees it (it cannot see Synchronization.Mutex)
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<creators {
                done.enter()
                Thread.detachNewThread {
                    start.wait()
                    if let key = try? TokenStoreKey.load(fromFile: path, createIfMissing: true) {
                        ids.withLock { $0.append(key.identifier) }
                    }
                    done.leave()
                }
            }
            for _ in 0..<creators { start.signal() }
            done.wait()
            let onDisk = try TokenStoreKey.load(fromFile: path, createIfMissing: false).identifier
            let all = ids.withLock { $0 }
            #expect(all.count == creators, "round \(round): every creator got a key")
            #expect(all.allSatisfy { $0 == onDisk }, "round \(round): \(Set(all.map { $0.description }).count) different keys")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func temporaryFilesOfDeadWritersAreRemovedWhenAStoreOpens() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A pid no process has: kill(pid, 0) answers ESRCH.
        let dead: Int32 = 2_147_483_646
        let stale = [
            "tokens-0123456789abcdef01234567.sealed.tmp-\(dead)-12345", "state-0123.json.tmp-\(dead)-1",
            "store.key.tmp-\(dead)-99",
        ]
        let kept = ["tokens-x.sealed.tmp-\(getpid())-7", "notes.tmp-keep", "tokens-y.sealed", "a.tmp-12-x"]
        for name in stale + kept {
            #expect(FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data("x".utf8)))
        }
        _ = try EncryptedFileTokenStore(directory: directory, key: TokenStoreKey.random())
        _ = try FileSessionStateStore(directory: directory)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        #expect(left == Set(kept), "\(left)")
    }
}
