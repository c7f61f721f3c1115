import Foundation
import Locking

/// Runs `body(i)` for i in 0..<count, each on its own thread, and returns the results in
/// order. Blocking socket clients belong on threads: on the cooperative pool (two threads
/// on two cores) they would starve the actors the servers under test need.
public func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) async -> [T] {
    let results = Locked<[Int: T]>([:])
    await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
        let remaining = Locked(count)
        for i in 0..<count {
            let t = Thread {
                let r = body(i)
                results.withLock { $0[i] = r }
                let left = remaining.withLock { n -> Int in
                    n -= 1
                    return n
                }
                if left == 0 { cont.resume() }
            }
            t.stackSize = 256 * 1024
            t.start()
        }
        if count == 0 { cont.resume() }
    }
    return results.withLock { r in (0..<count).map { r[$0]! } }
}

/// Runs one blocking `body` on its own thread and returns its result.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let result = await onThreads(1) { _ in Result { try body() } }
    return try result[0].get()
}
