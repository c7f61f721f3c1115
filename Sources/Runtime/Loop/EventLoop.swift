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

    private struct Exit {
        var ended = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private struct State {
        var jobs: [Job] = []
        var wakeupPending = false
        var acceptingJobs = true
    }

    let uv: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: LoopAsync
    private let idle: LoopIdle
    private let state = Locked(State())
    private let threadID = Atomic<UInt>(0)
    private let dropped = Atomic<Int>(0)
    private let started = Atomic<Bool>(false)
    private let shutDown = Atomic<Bool>(false)
    /// Whether the loop thread has run its last step, and who waits for it (``close()``).
    private let exit = Locked(Exit())
    private var thread = pthread_t()
    private var spareJobs: [Job] = []
    private var shutdownHooks: [() -> Void] = []
    /// Output appended this turn, by descriptor (``appendOutput(_:to:)``); loop thread only.
    /// A list, not a dictionary: a loop writes to one or two descriptors, and each keeps
    /// its buffer's capacity from turn to turn.
    var pendingOutput: [(fd: Int32, bytes: [UInt8])] = []
    /// Writes ``pendingOutput`` after each turn's I/O, once something was appended.
    var outputCheck: LoopCheck?
    /// The thread-specific key of ``current``.
    static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key, nil)
        precondition(rc == 0, "pthread_key_create failed: \(rc)")
        return key
    }()
    /// Scratch buffer for reads; every read callback consumes it before the next read.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// A name for logs and thread names.
    public let name: String

    /// Creates a loop; call ``start()`` to run it on its own thread. Throws when libuv
    /// cannot make the loop or its wakeup handles (out of descriptors).
    public init(name: String = "authgate-loop") throws(RuntimeError) {
        let uv = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        let rc = uv_loop_init(uv)
        if rc < 0 {
            uv.deallocate()
            throw .libuv(rc, "uv_loop_init")
        }
        // The callbacks find the loop through `uv.pointee.data`, set below before any
        // callback can run (callbacks run only inside `uv_run`, on the thread `start` makes).
        let wakeup: LoopAsync
        let idle: LoopIdle
        do throws(RuntimeError) {
            wakeup = try LoopAsync(loop: uv) { EventLoop.from(uv).drain() }
            do throws(RuntimeError) {
                idle = try LoopIdle(loop: uv) { EventLoop.from(uv).drain() }
            } catch {
                wakeup.close()
                throw error
            }
        } catch {
            EventLoop.discard(uv)
            throw error
        }
        self.uv = uv
        self.wakeup = wakeup
        self.idle = idle
        self.name = name
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        uv.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        if !started.load(ordering: .acquiring) {
            // Never run: close the handles here, on the only thread that ever saw them.
            idle.close()
            wakeup.close()
            EventLoop.discard(uv)
        } else {
            uv.deallocate()
        }
        readBuffer.deallocate()
    }

    /// Runs the close callbacks of a loop that never ran, closes it and frees it. A loop
    /// that still has handles open is left allocated: freeing it would leave them dangling.
    private static func discard(_ uv: UnsafeMutablePointer<uv_loop_t>) {
        // uv_run's result (whether handles are still active) is what uv_loop_close checks.
        _ = uv_run(uv, UV_RUN_NOWAIT)
        if uv_loop_close(uv) == 0 { uv.deallocate() }
    }

    private static let ignoreSIGPIPE: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    private static func from(_ uv: UnsafeMutablePointer<uv_loop_t>) -> EventLoop {
        // Invariant: `init` sets `data` to the loop before any callback can run, and the
        // loop outlives its thread's `uv_run` (the thread holds a reference).
        Unmanaged<EventLoop>.fromOpaque(uv.pointee.data!).takeUnretainedValue()
    }

    /// Starts the loop thread. Returns once the thread runs.
    ///
    /// Also makes the process ignore `SIGPIPE`: libuv writes to sockets with `write(2)`,
    /// and a peer that closed must give `EPIPE`, not kill the server.
    public func start() {
        precondition(!started.exchange(true, ordering: .acquiringAndReleasing), "\(name) started twice")
        _ = EventLoop.ignoreSIGPIPE
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &thread, nil,
            { arg in
                // Invariant: `arg` is the retained `box` passed below, never nil.
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
        let set = pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        precondition(set == 0, "pthread_setspecific failed: \(set)")
        // uv_run's result (whether handles are still active) is what uv_loop_close checks.
        _ = uv_run(uv, UV_RUN_DEFAULT)
        // Every handle is closed by now; a busy loop here is a leak worth failing on.
        let rc = uv_loop_close(uv)
        precondition(rc == 0, "uv_loop_close: handles still open on \(name)")
        let waiters = exit.withLock { e in
            e.ended = true
            defer { e.waiters = [] }
            return e.waiters
        }
        for waiter in waiters { waiter.resume() }
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

    private enum Wakeup {
        case dropped, pending, idle
        case failed(RuntimeError)
    }

    private func push(_ job: Job) {
        let onLoop = inEventLoop
        let wakeup = state.withLock { s -> Wakeup in
            // After shutdown the job cannot run: it is dropped (a late response to a
            // connection that is already gone, for example).
            guard s.acceptingJobs else { return .dropped }
            s.jobs.append(job)
            if s.wakeupPending { return .pending }
            s.wakeupPending = true
            if onLoop { return .idle }
            // Sent under the lock: the loop thread closes the async handle only after it
            // stopped accepting jobs under this lock, so the handle is open here.
            do throws(RuntimeError) {
                try self.wakeup.send()
            } catch {
                return .failed(error)
            }
            return .pending
        }
        switch wakeup {
        case .pending:
            return
        case .dropped:
            dropped.add(1, ordering: .relaxed)
        case .idle:
            do throws(RuntimeError) {
                try idle.start()
            } catch {
                // Only a closing handle refuses, and the handles close after the queue
                // stopped accepting jobs: a job accepted here would never run.
                preconditionFailure("\(name): \(error)")
            }
        case .failed(let error):
            // libuv 1.44's uv_async_send does not fail on an open handle.
            preconditionFailure("\(name): \(error)")
        }
    }

    private func drain() {
        idle.stop()
        // Swap buffers so the lock is held only for the swap.
        var batch = spareJobs
        state.withLock { s in
            swap(&batch, &s.jobs)
            s.wakeupPending = false
        }
        run(batch)
        batch.removeAll(keepingCapacity: true)
        spareJobs = batch
    }

    private func run(_ batch: [Job]) {
        for job in batch {
            switch job {
            case .closure(let f):
                f()
            case .task(let j):
                j.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
        }
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
    /// Blocks the calling thread; async callers use ``close()``. A second call returns at once.
    ///
    /// Everything on the loop must have closed its handles by then (the hooks do it);
    /// the loop thread asserts that `uv_loop_close` succeeds.
    public func shutdown() {
        guard beginShutdown() else { return }
        pthread_join(thread, nil)
    }

    /// ``shutdown()`` without blocking a thread: the task waits until the loop thread has run
    /// its last step, and the join that follows only reaps it. A second call returns at once.
    /// Not from a task that prefers this loop as its executor: it could never resume.
    public func close() async {
        guard beginShutdown() else { return }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ended = exit.withLock { e in
                if !e.ended { e.waiters.append(waiter) }
                return e.ended
            }
            if ended { waiter.resume() }
        }
        pthread_join(thread, nil)
    }

    /// Asks the loop to run its shutdown hooks and close its own handles, once; false when
    /// it was asked already (a second join of the same thread is undefined behaviour).
    private func beginShutdown() -> Bool {
        precondition(!inEventLoop, "shutdown must not be called on the loop itself")
        guard !shutDown.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        execute { [self] in
            let hooks = shutdownHooks
            shutdownHooks = []
            for h in hooks { h() }
            closeOwnHandles()
        }
        return true
    }

    private func closeOwnHandles() {
        // Run whatever raced in. Refusing more and taking what came meanwhile is one step,
        // so every job the queue accepted runs (what those jobs enqueue is dropped).
        drain()
        var last: [Job] = []
        state.withLock { s in
            s.acceptingJobs = false
            swap(&last, &s.jobs)
        }
        run(last)
        // What the last jobs logged: the check handle that writes it each turn is closed.
        flushOutput()
        outputCheck?.close()
        idle.close()
        wakeup.close()
        // Whatever is still open now would keep the loop, and `shutdown`, waiting forever:
        // name it on stderr, so the owner that forgot to close it can be found. (uv_walk
        // returns void.)
        uv_walk(
            uv,
            { handle, _ in
                guard let handle, uv_is_closing(handle) == 0 else { return }
                let type = String(cString: uv_handle_type_name(handle.pointee.type))
                let line = "authgate: event loop shutdown: a \(type) handle is still open (active: \(uv_is_active(handle)))\n"
                _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
            }, nil)
    }
}

extension EventLoop {
    /// The loop's clock in milliseconds (`uv_now`): the time this turn of the loop began,
    /// cached by libuv, so reading it costs no system call. Loop thread only.
    var now: UInt64 { uv_now(uv) }
}
