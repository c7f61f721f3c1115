import Locking

/// Bounds the exchanges one route has at its upstream at once (`routes[].maxInFlight`), so
/// that requests queue in AuthGate, where the session's token is attached as they leave,
/// rather than in an upstream's own queue, where a token attached on arrival can expire or
/// be revoked by a rotation before the upstream looks at it.
///
/// The order is an ``AdmissionQueue``: first come, first served, replays first. A request
/// waits at most `timeout`; then it is answered 503 (``Failure/timedOut``) without reaching
/// the upstream.
///
/// ```swift
/// let limiter = InFlightLimiter(limit: 16, timeout: .seconds(30))
/// try await limiter.acquire(.first)
/// defer { limiter.release() }
/// ```
public final class InFlightLimiter: Sendable {
    /// Why ``acquire(_:)`` gave no slot.
    public enum Failure: Error, Equatable {
        /// The request waited `timeout` without a slot.
        case timedOut
        /// The waiting task was cancelled.
        case cancelled
    }

    private struct State {
        var queue: AdmissionQueue
        var timeout: Duration
        var nextTicket: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    }

    /// The most exchanges at the upstream at once.
    public var limit: Int { state.withLock { $0.queue.limit } }
    /// The longest a request waits for a slot.
    public var timeout: Duration { state.withLock { $0.timeout } }
    private let state: Locked<State>

    /// Creates a limiter of `limit` slots (at least 1).
    public init(limit: Int, timeout: Duration) {
        state = Locked(State(queue: AdmissionQueue(limit: limit), timeout: timeout))
    }

    /// Takes a reload's new limit and timeout. The exchanges at the upstream stay counted,
    /// so the route never has more than the new limit there once the old ones have left;
    /// waiters a larger limit admits proceed now. A request already waiting keeps the
    /// timeout it started with.
    public func reconfigure(limit: Int, timeout: Duration) {
        let admitted: [CheckedContinuation<Void, any Error>] = state.withLock { s in
            s.timeout = timeout
            return s.queue.setLimit(limit).compactMap { s.waiters.removeValue(forKey: $0) }
        }
        for waiter in admitted { waiter.resume() }
    }

    /// Exchanges at the upstream now, and requests waiting for a slot.
    public var load: (inFlight: Int, waiting: Int) {
        state.withLock { ($0.queue.inFlight, $0.queue.waiting) }
    }

    /// Waits for a slot in `lane`; every slot taken must be given back with ``release()``.
    /// Throws ``Failure``.
    public func acquire(_ lane: AdmissionQueue.Lane) async throws(Failure) {
        // The common case, a free slot and nobody waiting, takes the lock once.
        let ticket: UInt64? = state.withLock { s in
            if s.queue.admitWithoutWaiting() { return nil }
            defer { s.nextTicket += 1 }
            return s.nextTicket
        }
        guard let ticket else { return }
        let timeout = self.timeout
        let timer = Task { [weak self, timeout] in
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self?.giveUp(ticket, .timedOut) }
        }
        defer { timer.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (cont: CheckedContinuation<Void, any Error>) in
                    // Joining the queue and leaving the continuation happen under one lock,
                    // so a release can never pick this ticket before it can be resumed.
                    let now: Result<Void, Failure>? = state.withLock { s in
                        if Task.isCancelled { return .failure(.cancelled) }
                        if s.queue.admit(ticket, lane: lane) == .proceed { return .success(()) }
                        s.waiters[ticket] = cont
                        return nil
                    }
                    switch now {
                    case .success: cont.resume()
                    case .failure(let failure): cont.resume(throwing: failure)
                    case nil: break
                    }
                }
            } onCancel: {
                giveUp(ticket, .cancelled)
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .cancelled
        }
    }

    /// Gives a slot back; the next waiter, if any, takes it.
    public func release() {
        let next: CheckedContinuation<Void, any Error>? = state.withLock { s in
            guard let ticket = s.queue.release() else { return nil }
            return s.waiters.removeValue(forKey: ticket)
        }
        next?.resume()
    }

    private func giveUp(_ ticket: UInt64, _ failure: Failure) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { s in
            guard s.queue.withdraw(ticket) else { return nil }
            return s.waiters.removeValue(forKey: ticket)
        }
        waiter?.resume(throwing: failure)
    }
}
