import CLibUV
import Glibc
import Locking
import Synchronization

/// One libuv loop running on its own thread, and the Swift executor for it.
///
/// `EventLoop` is a `SerialExecutor` (actors can use it as their `unownedExecutor`)
/// and a `TaskExecutor` (tasks can prefer it). Jobs go into a queue under a lock;
/// one coalesced wakeup drains it: `uv_async_send` from other threads, an idle handle
/// from the loop thread itself, so work scheduled on the loop costs no system call.
///
/// Handles are allocated on the heap and freed only in their close callbacks.
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    // @unchecked: `uv` and the handles are touched only on the loop thread (after
    // `start`) or before the thread exists; the queue is guarded by `state`.

    private enum Job {
        case closure(@Sendable () -> Void)
        case task(UnownedJob)
    }

    private struct State {
        var jobs: [Job] = []
        var wakeupPending = false
        var acceptingJobs = true
    }

    let uv: UnsafeMutablePointer<uv_loop_t>
    private let async: UnsafeMutablePointer<uv_async_t>
    private let idle: UnsafeMutablePointer<uv_idle_t>
    private let state = Locked(State())
    private let threadID = Atomic<UInt>(0)
    private let dropped = Atomic<Int>(0)
    private let shutDown = Atomic<Bool>(false)
    private var thread = pthread_t()
    private var spareJobs: [Job] = []
    private var shutdownHooks: [() -> Void] = []
    /// Scratch buffer for reads; every read callback consumes it before the next read.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// A name for logs and thread names.
    public let name: String

    /// Creates a loop; call ``start()`` to run it on its own thread.
    public init(name: String = "authgate-loop") throws(UVError) {
        self.name = name
        uv = .allocate(capacity: 1)
        async = .allocate(capacity: 1)
        idle = .allocate(capacity: 1)
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        let rc = uv_loop_init(uv)
        if rc < 0 {
            uv.deallocate()
            async.deallocate()
            idle.deallocate()
            readBuffer.deallocate()
            throw UVError(code: rc, operation: "uv_loop_init")
        }
        uv.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        try! UVError.check(
            uv_async_init(uv, async) { handle in EventLoop.from(handle!.pointee.loop).drain() }, "uv_async_init")
        try! UVError.check(uv_idle_init(uv, idle), "uv_idle_init")
    }

    deinit {
        uv.deallocate()
        async.deallocate()
        idle.deallocate()
        readBuffer.deallocate()
    }

    private static let ignoreSIGPIPE: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    static func from(_ loop: UnsafeMutablePointer<uv_loop_t>?) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(loop!.pointee.data).takeUnretainedValue()
    }

    /// Starts the loop thread. Returns once the thread runs.
    ///
    /// Also makes the process ignore `SIGPIPE`: libuv writes to sockets with `write(2)`,
    /// and a peer that closed must give `EPIPE`, not kill the server.
    public func start() {
        _ = EventLoop.ignoreSIGPIPE
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { arg in
            let loop = Unmanaged<EventLoop>.fromOpaque(arg!).takeRetainedValue()
            loop.run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        while threadID.load(ordering: .acquiring) == 0 {
            sched_yield()
        }
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        uv_run(uv, UV_RUN_DEFAULT)
        // Every handle is closed by now; a busy loop here is a leak worth failing on.
        let rc = uv_loop_close(uv)
        precondition(rc == 0, "uv_loop_close: handles still open on \(name)")
    }

    /// Whether the caller runs on this loop's thread.
    public var inEventLoop: Bool {
        UInt(pthread_self()) == threadID.load(ordering: .relaxed)
    }

    /// Jobs enqueued after shutdown, which never ran.
    public var droppedJobs: Int { dropped.load(ordering: .relaxed) }

    /// Runs `job` on the loop thread, soon. Jobs run in the order they were enqueued.
    public func execute(_ job: @escaping @Sendable () -> Void) {
        push(.closure(job))
    }

    /// Runs `job` now when called on the loop thread, else enqueues it.
    public func executeSoonOrNow(_ job: @escaping @Sendable () -> Void) {
        if inEventLoop { job() } else { push(.closure(job)) }
    }

    private func push(_ job: Job) {
        let onLoop = inEventLoop
        let mustSignal = state.withLock { s -> Bool? in
            // After shutdown the job cannot run: it is dropped (a late response to a
            // connection that is already gone, for example).
            guard s.acceptingJobs else { return nil }
            s.jobs.append(job)
            if s.wakeupPending { return false }
            s.wakeupPending = true
            return true
        }
        guard let mustSignal else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        guard mustSignal else { return }
        if onLoop {
            uv_idle_start(idle) { handle in EventLoop.from(handle!.pointee.loop).drain() }
        } else {
            uv_async_send(async)
        }
    }

    private func drain() {
        uv_idle_stop(idle)
        // Swap buffers so the lock is held only for the swap.
        var batch = spareJobs
        state.withLock { s in
            swap(&batch, &s.jobs)
            s.wakeupPending = false
        }
        for job in batch {
            switch job {
            case .closure(let f):
                f()
            case .task(let j):
                j.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
        }
        batch.removeAll(keepingCapacity: true)
        spareJobs = batch
    }

    // MARK: Executor

    public func enqueue(_ job: consuming ExecutorJob) {
        push(.task(UnownedJob(job)))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(inEventLoop, "expected to run on \(name)")
    }

    // MARK: Shutdown

    /// Registers work to run on the loop thread when the loop shuts down (close handles).
    /// Call on the loop thread.
    func onShutdown(_ hook: @escaping () -> Void) {
        precondition(inEventLoop)
        shutdownHooks.append(hook)
    }

    /// Closes the loop's own handles after the registered hooks, waits for the thread to end.
    ///
    /// Everything on the loop must have closed its handles by then (the hooks do it);
    /// the loop thread asserts that `uv_loop_close` succeeds.
    public func shutdown() {
        precondition(!inEventLoop, "shutdown must not be called on the loop itself")
        // Once only: a second join of the same thread is undefined behaviour.
        guard !shutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        execute { [self] in
            let hooks = shutdownHooks
            shutdownHooks = []
            for h in hooks { h() }
            closeOwnHandles()
        }
        pthread_join(thread, nil)
    }

    private func closeOwnHandles() {
        // Run whatever raced in, then refuse more.
        drain()
        state.withLock { $0.acceptingJobs = false }
        uv_idle_stop(idle)
        uv_close(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(idle)), nil)
        uv_close(UnsafeMutablePointer<uv_handle_t>(OpaquePointer(async)), nil)
        // Whatever is still open now would keep the loop, and `shutdown`, waiting forever:
        // name it on stderr, so the owner that forgot to close it can be found.
        uv_walk(uv, { handle, _ in
            guard let handle, uv_is_closing(handle) == 0 else { return }
            let type = String(cString: uv_handle_type_name(handle.pointee.type))
            let line = "authgate: event loop shutdown: a \(type) handle is still open (active: \(uv_is_active(handle)))\n"
            _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
        }, nil)
    }
}
