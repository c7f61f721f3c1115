import Locking

/// Bounds the exchanges at an upstream at once, so that requests queue in AuthGate, where the
/// session's token is attached as they leave, rather than in an upstream's own queue, where a
/// token attached on arrival can expire or be revoked by a rotation before the upstream looks
/// at it. The bound is fixed (`routes[].maxInFlight`) or found by an ``AdaptiveLimit`` from
/// the samples ``release(_:at:)`` is given (one limiter per upstream origin).
///
/// The order is an ``AdmissionQueue``: first come, first served, replays first. A request
/// waits at most its timeout; then it is answered 503 (``GatewayError/Code/upstreamBusy``)
/// without reaching the upstream. A first try whose expected wait (waiting × recent latency ÷
/// limit) is already longer than that is refused at once (``GatewayError/Code/upstreamShed``).
///
/// One task per limiter, not one per waiter, times the waits out: it sleeps until the
/// earliest deadline of those waiting, gives up whoever is past theirs, and ends when nobody
/// waits. Under overload nearly every request waits, and a timer task for each would cost it
/// about 15,000 instructions and 11 allocations, on the global executor's threads
/// (docs/BENCHMARKS.md). A waiter needs no task either: ``requestSlot(_:timeout:whenDecided:)``
/// tells it by a callback.
///
/// ```swift
/// let limiter = InFlightLimiter(limit: 16, timeout: .seconds(30))
/// try await limiter.acquire(.first)
/// defer { limiter.release() }
/// ```
public final class InFlightLimiter: Sendable {
    private struct State {
        var queue: AdmissionQueue
        var controller: AdaptiveLimit
        var timeout: Duration
        var nextTicket: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        /// The task that times the waits out, and when it wakes next; nil while nobody waits.
        var sweeper: Task<Void, Never>?
        var sweepAt: ContinuousClock.Instant?
        /// Which sweeper is current: one that finds another number has been replaced.
        var sweeperGeneration: UInt64 = 0

        /// Takes the waiter of `ticket` out, if it still waits.
        mutating func take(_ ticket: UInt64) -> Decided? {
            waiters.removeValue(forKey: ticket)?.decided
        }
    }

    /// How a waiter is told its wait ended: the exchanges at the upstream with its slot, or why
    /// it got none.
    typealias Decided = @Sendable (Result<Int, GatewayError>) -> Void

    /// A request waiting for a slot.
    private struct Waiter {
        /// Told once when the wait ends.
        let decided: Decided
        /// When it gives up.
        let deadline: ContinuousClock.Instant
    }

    /// The upstream origin it bounds (the `origin` label of its metrics).
    public let origin: String
    /// The route prefix it bounds (a fixed `maxInFlight`), or `*`: every adaptive route to
    /// ``origin`` (the `route` label of its metrics).
    public let route: String
    /// The most exchanges at the upstream at once, now.
    public var limit: Int { state.withLock { $0.queue.limit } }
    /// The longest a request waits for a slot, unless ``acquire(_:timeout:)`` says otherwise.
    public var timeout: Duration { state.withLock { $0.timeout } }
    /// How the limit moves (``AdaptiveLimit/Parameters/fixed(_:)`` for a fixed one).
    public var parameters: AdaptiveLimit.Parameters { state.withLock { $0.controller.parameters } }
    /// Whether the limit moves with the samples.
    public var isAdaptive: Bool { state.withLock { $0.controller.parameters.isAdaptive } }
    /// The controller's state now (its limit, baseline and recent latency).
    public var controller: AdaptiveLimit { state.withLock { $0.controller } }
    private let state: Locked<State>
    private let epoch = ContinuousClock.now

    /// Creates a limiter of `limit` slots (at least 1), fixed.
    public convenience init(limit: Int, timeout: Duration, origin: String = "", route: String = "*") {
        self.init(.fixed(limit), timeout: timeout, origin: origin, route: route)
    }

    /// Creates a limiter whose limit an ``AdaptiveLimit`` with `parameters` moves.
    public init(_ parameters: AdaptiveLimit.Parameters, timeout: Duration, origin: String = "", route: String = "*") {
        let controller = AdaptiveLimit(parameters)
        self.origin = origin
        self.route = route
        state = Locked(State(queue: AdmissionQueue(limit: controller.admitted), controller: controller, timeout: timeout))
    }

    /// Takes a reload's new limit and timeout (a fixed limiter).
    public func reconfigure(limit: Int, timeout: Duration) {
        reconfigure(.fixed(limit), timeout: timeout)
    }

    /// Takes a reload's new parameters and timeout. The exchanges at the upstream stay
    /// counted, so the upstream never has more than the new limit there once the old ones
    /// have left; waiters a larger limit admits proceed now. A request already waiting keeps
    /// the timeout it started with. New parameters start a new controller at the limit now,
    /// within the new bounds.
    public func reconfigure(_ parameters: AdaptiveLimit.Parameters, timeout: Duration) {
        let admitted: [Decided] = state.withLock { s in
            s.timeout = timeout
            guard parameters != s.controller.parameters else { return [] }
            var p = parameters
            p.initial = min(max(s.queue.limit, p.minimum), p.maximum)
            let changes = s.controller.changes
            s.controller = AdaptiveLimit(p)
            s.controller.changes = changes
            return s.queue.setLimit(s.controller.admitted).compactMap { s.take($0) }
        }
        for waiter in admitted { waiter(.success(0)) }
    }

    /// What `/metrics` shows of the limiter now.
    public var reading: GatewayMetrics.UpstreamLimitReading {
        state.withLock { s in
            GatewayMetrics.UpstreamLimitReading(
                origin: origin, route: route, limit: s.queue.limit, inFlight: s.queue.inFlight, waiting: s.queue.waiting,
                baselineSeconds: s.controller.baseline, latencySeconds: s.controller.recentLatency,
                changes: s.controller.parameters.isAdaptive ? s.controller.changes : nil)
        }
    }

    /// Whether a task is timing waits out now (none once nobody waits, after its next wake).
    var timesOutWaits: Bool { state.withLock { $0.sweeper != nil } }

    /// Exchanges at the upstream now, and requests waiting for a slot.
    public var load: (inFlight: Int, waiting: Int) {
        state.withLock { ($0.queue.inFlight, $0.queue.waiting) }
    }

    /// Takes a slot when one is free and nobody waits, without suspending: the exchanges at
    /// the upstream now, this one included; nil when there is no such slot.
    public func acquireWithoutWaiting() -> Int? {
        state.withLock { s in s.queue.admitWithoutWaiting() ? s.queue.inFlight : nil }
    }

    /// What ``requestSlot(_:timeout:whenDecided:)`` decided at once.
    public enum SlotRequest: Sendable, Equatable {
        /// A slot was free: taken now, with the exchanges at the upstream, this one included.
        case granted(inFlight: Int)
        /// Refused at once (``GatewayError/Code/upstreamShed``): the queue is longer than the
        /// timeout would let the request wait.
        case refused(GatewayError)
        /// In the queue: `whenDecided` will be called once; ``cancelWait(_:)`` takes `ticket`
        /// out.
        case waiting(ticket: UInt64)
    }

    /// Asks for a slot in `lane`, waiting at most `timeout` (default: ``timeout``), without a
    /// task: when the request has to wait, `whenDecided` is called once, on the thread that
    /// decides (a release's, the timer task's, a reload's), with the exchanges at the
    /// upstream once the slot was taken (0 when a reload handed it over), or with
    /// ``GatewayError/Code/upstreamBusy`` (no slot in time, with the queue's expected wait as
    /// its ``GatewayError/retryAfter``) or ``GatewayError/Code/slotCancelled``. It is never
    /// called when the answer comes at once. Every slot taken must be given back with
    /// ``release(_:at:)``.
    public func requestSlot(
        _ lane: AdmissionQueue.Lane, timeout: Duration? = nil,
        whenDecided: @escaping @Sendable (Result<Int, GatewayError>) -> Void
    ) -> SlotRequest {
        var replaced: Task<Void, Never>?
        let request = state.withLock { s -> SlotRequest in
            if s.queue.admitWithoutWaiting() { return .granted(inFlight: s.queue.inFlight) }
            let timeout = timeout ?? s.timeout
            if lane == .first, let retryAfter = Self.expectedWaitBeyond(timeout, s) {
                return .refused(.upstreamShed(retryAfter: retryAfter))
            }
            let ticket = s.nextTicket
            s.nextTicket += 1
            // Joining the queue and leaving the callback happen under one lock, so a release
            // can never pick this ticket before it can be told.
            _ = s.queue.admit(ticket, lane: lane)
            let deadline = ContinuousClock.now + timeout
            s.waiters[ticket] = Waiter(decided: whenDecided, deadline: deadline)
            if s.sweepAt.map({ deadline < $0 }) ?? true { replaced = sweep(at: deadline, &s) }
            return .waiting(ticket: ticket)
        }
        replaced?.cancel()
        return request
    }

    /// Waits for a slot in `lane`, at most `timeout` (default: ``timeout``), in the calling
    /// task (``requestSlot(_:timeout:whenDecided:)`` is the same without one); every slot
    /// taken must be given back with ``release(_:at:)``. Returns the exchanges at the
    /// upstream when the slot was taken, this one included (0 when a reload handed it over).
    /// Throws a ``GatewayError``: ``GatewayError/Code/upstreamBusy`` (no slot in time),
    /// ``GatewayError/Code/upstreamShed`` (refused at once) or
    /// ``GatewayError/Code/slotCancelled`` (the task was cancelled), with the wait's
    /// ``GatewayError/retryAfter``.
    @discardableResult
    public func acquire(_ lane: AdmissionQueue.Lane, timeout: Duration? = nil) async throws(GatewayError) -> Int {
        let ticket = Locked<UInt64?>(nil)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (cont: CheckedContinuation<Int, any Error>) in
                    switch requestSlot(lane, timeout: timeout, whenDecided: { cont.resume(with: $0) }) {
                    case .granted(let n): cont.resume(returning: n)
                    case .refused(let failure): cont.resume(throwing: failure)
                    case .waiting(let t):
                        ticket.withLock { $0 = t }
                        // Cancelled before the ticket was known to the handler.
                        if Task.isCancelled { cancelWait(t) }
                    }
                }
            } onCancel: {
                if let t = ticket.withLock({ $0 }) { cancelWait(t) }
            }
        } catch let failure as GatewayError {
            throw failure
        } catch {
            throw .slotCancelled
        }
    }

    /// Gives a slot back with nothing learned (the exchange never reached the upstream); the
    /// next waiter, if any, takes it.
    public func release() {
        let next: (Decided, Int)? = state.withLock { s in
            guard let ticket = s.queue.release() else { return nil }
            return s.take(ticket).map { ($0, s.queue.inFlight) }
        }
        if let (waiter, inFlight) = next { waiter(.success(inFlight)) }
    }

    /// Gives a slot back with what its exchange, ended `at`, says of the upstream: the
    /// controller takes the sample, the queue takes a new limit when it moved, and the next
    /// waiters, if any, take the slots free now.
    public func release(_ sample: AdaptiveLimit.Sample, at now: ContinuousClock.Instant) {
        // One lock; the list stays empty (no allocation) unless the limit grew.
        var next: Decided?
        var nextInFlight = 0
        var more: [(Decided, Int)] = []
        state.withLock { s in
            if let t = s.queue.release() {
                next = s.take(t)
                nextInFlight = s.queue.inFlight
            }
            guard s.controller.record(sample, at: now - epoch) else { return }
            more = s.queue.setLimit(s.controller.admitted).compactMap { t in
                s.take(t).map { ($0, s.queue.inFlight) }
            }
        }
        next?(.success(nextInFlight))
        for (waiter, inFlight) in more { waiter(.success(inFlight)) }
    }

    /// When a first try that joins the queue now would wait longer than `timeout` by the
    /// queue's expected wait, that wait in whole seconds (at least 1); else nil.
    ///
    /// Not before the adaptive limit's probes have shown the upstream full at it
    /// (``AdaptiveLimit/upstreamShownFull``). In slow start the limit doubles per window, so
    /// the queue drains far faster than the limit of the moment says: shedding then refused
    /// most of a burst that met a fresh limiter at 1 (in a storm of 100 clients against a
    /// 16-slot API, thousands of 503s in the first seconds). After a false queue ended slow
    /// start at 2 in front of that API, its queue read as 14 s and every first try was
    /// refused at once: closed-loop clients came straight back, and 131 requests of 40,000
    /// reached the API in 10 s.
    private static func expectedWaitBeyond(_ timeout: Duration, _ s: State) -> Int? {
        if !s.controller.upstreamShownFull { return nil }
        guard let wait = expectedWait(s) else { return nil }
        let limit = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18
        guard wait > limit else { return nil }
        return max(1, Int(wait.rounded(.up)))
    }

    /// The seconds a request that joined the queue now would wait: those waiting, and it,
    /// at what the upstream serves per second — the limit over the recent latency, or the
    /// rate it has lately answered at when that is higher (an adaptive limit dips under the
    /// upstream's concurrency for a window now and then, and the queue does not slow down
    /// by half for it); nil before any latency is known.
    private static func expectedWait(_ s: State) -> Double? {
        guard let latency = s.controller.recentLatency else { return nil }
        let served = max(Double(s.queue.limit) / latency, s.controller.answerRate ?? 0)
        return Double(s.queue.waiting + 1) / served
    }

    /// Takes `ticket` (``SlotRequest/waiting(ticket:)``) out of the queue and tells its waiter
    /// ``GatewayError/Code/slotCancelled``; nothing when its wait has already ended.
    public func cancelWait(_ ticket: UInt64) {
        let left = state.withLock { s in s.queue.withdraw(ticket) ? s.take(ticket) : nil }
        left?(.failure(.slotCancelled))
    }

    /// Starts the sweeper that wakes at `deadline` in place of the current one, which it
    /// returns to be cancelled (outside the lock).
    private func sweep(at deadline: ContinuousClock.Instant, _ s: inout State) -> Task<Void, Never>? {
        s.sweeperGeneration &+= 1
        let generation = s.sweeperGeneration
        let replaced = s.sweeper
        s.sweepAt = deadline
        s.sweeper = Task { [weak self] in
            var wake = deadline
            while true {
                // Cancelled: replaced by a sweeper that wakes earlier; the check below ends it.
                try? await Task.sleep(until: wake, clock: .continuous)
                guard let self, let next = self.timeOut(generation) else { return }
                wake = next
            }
        }
        return replaced
    }

    /// Fails every waiter past its deadline with ``GatewayError/Code/upstreamBusy`` (and the
    /// queue's expected wait as it leaves). Returns when the sweeper `generation` should wake
    /// next: the earliest deadline left; nil when nobody waits (the sweeper ends) or another
    /// sweeper has replaced it.
    private func timeOut(_ generation: UInt64) -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        var expired: [(Decided, GatewayError)] = []
        let next: ContinuousClock.Instant? = state.withLock { s in
            guard s.sweeperGeneration == generation else { return nil }
            var next: ContinuousClock.Instant?
            var late: [UInt64] = []
            for (ticket, waiter) in s.waiters {
                if waiter.deadline <= now {
                    late.append(ticket)
                } else if next.map({ waiter.deadline < $0 }) ?? true {
                    next = waiter.deadline
                }
            }
            // In the order they joined: each one's Retry-After counts those still ahead of it.
            for ticket in late.sorted() where s.queue.withdraw(ticket) {
                guard let waiter = s.take(ticket) else { continue }
                let wait = Self.expectedWait(s).map { max(1, Int($0.rounded(.up))) } ?? 1
                expired.append((waiter, .upstreamBusy(retryAfter: wait)))
            }
            s.sweepAt = next
            if next == nil { s.sweeper = nil }
            return next
        }
        for (waiter, failure) in expired { waiter(.failure(failure)) }
        return next
    }
}
