import Glibc

/// A fixed set of running event loops, one thread each.
public final class EventLoopGroup: Sendable {
    /// The loops, started.
    public let loops: [EventLoop]

    /// Starts `count` loops (default: one per core).
    public init(loopCount: Int = EventLoopGroup.coreCount, name: String = "authgate-loop") throws(RuntimeError) {
        var loops: [EventLoop] = []
        for i in 0..<max(1, loopCount) {
            let loop = try EventLoop(name: "\(name)-\(i)")
            loop.start()
            loops.append(loop)
        }
        self.loops = loops
    }

    /// The number of online processors.
    public static var coreCount: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    /// Shuts every loop down and joins its thread.
    /// Blocks the calling thread; async callers use ``close()``.
    public func shutdown() {
        for loop in loops { loop.shutdown() }
    }

    /// Shuts every loop down and waits for its thread to end, without blocking a thread.
    public func close() async {
        for loop in loops { await loop.close() }
    }
}
