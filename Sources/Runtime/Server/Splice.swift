import CLibUV

/// Joins a client connection and an upstream connection after `101 Switching Protocols`:
/// bytes both ways, with backpressure, half-close and an idle timeout. The decisions are
/// ``StateMachine``'s; this class runs its actions on the two ``SpliceEndpoint``s and a
/// timer. Loop-confined.
///
/// The endpoints hold the splice while it runs and forget it when it closes; the splice
/// holds them until then, so the cycle ends with the splice.
final class Splice {
    let loop: EventLoop
    private var machine: StateMachine
    private var client: (any SpliceEndpoint)?
    private var upstream: (any SpliceEndpoint)?
    private let timer: LoopTimer?
    private var onEnd: ((Outcome) -> Void)?

    /// Creates a splice; nothing moves before ``start(towardClient:towardUpstream:)``.
    /// `onEnd` hears once why it ended.
    init(
        loop: EventLoop, client: any SpliceEndpoint, upstream: any SpliceEndpoint, idleTimeout: Duration, highWater: Int,
        onEnd: @escaping (Outcome) -> Void
    ) {
        self.loop = loop
        self.client = client
        self.upstream = upstream
        self.onEnd = onEnd
        machine = StateMachine(
            configuration: StateMachine.Configuration(idleTimeout: max(1, idleTimeout.milliseconds), highWater: highWater))
        timer = try? LoopTimer(loop: loop.uv)
        // Set once: arming the timer again costs no closure.
        timer?.onFire = { [weak self] in self?.timerFired() }
    }

    private var now: UInt64 { loop.now }

    /// The outcome once it ended.
    var outcome: Outcome? { machine.outcome }

    /// Starts: `towardClient` (the `101` head and any bytes the upstream sent after it) is
    /// written to the client, `towardUpstream` (bytes the client sent after its request) to
    /// the upstream, then both sides are read.
    func start(towardClient: [UInt8], towardUpstream: [UInt8]) {
        guard timer != nil else {
            execute(machine.closedOutside(.client))
            return
        }
        execute(machine.start(now: now))
        if !towardClient.isEmpty { towardClient.withUnsafeBytes { received(.upstream, $0) } }
        if !towardUpstream.isEmpty { towardUpstream.withUnsafeBytes { received(.client, $0) } }
    }

    // MARK: Events from the endpoints

    /// Bytes read from `side`.
    func received(_ side: Side, _ bytes: UnsafeRawBufferPointer) {
        execute(machine.received(from: side, now: now), bytes: bytes)
    }

    /// `side`'s input ended: at its end (`failed` false) or with an error.
    func readEnded(_ side: Side, failed: Bool) {
        execute(failed ? machine.readFailed(from: side) : machine.readEnded(from: side, now: now))
    }

    /// A queued write to `side` completed.
    func writeCompleted(_ side: Side, failed: Bool) {
        let queued = endpoint(side)?.spliceQueuedBytes ?? 0
        execute(machine.writeCompleted(to: side, failed: failed, queuedBytes: queued, now: now))
    }

    /// The shutdown of writing to `side` completed.
    func shutdownCompleted(_ side: Side, failed: Bool) {
        execute(machine.shutdownCompleted(side, failed: failed))
    }

    /// `side` was closed by its owner (the server stopping): the splice ends.
    func closedOutside(_ side: Side) {
        if side == .client { client = nil } else { upstream = nil }
        execute(machine.closedOutside(side))
    }

    // MARK: Running actions

    private func endpoint(_ side: Side) -> (any SpliceEndpoint)? { side == .client ? client : upstream }

    private func execute(_ actions: StateMachine.Actions, bytes: UnsafeRawBufferPointer? = nil) {
        for i in actions.indices {
            switch actions[i] {
            case .forward(let side):
                guard let bytes, let target = endpoint(side) else { break }
                switch target.spliceWrite(bytes) {
                case .sent: break
                case .queued: execute(machine.writeQueued(to: side, queuedBytes: target.spliceQueuedBytes))
                case .failed: execute(machine.writeFailed(to: side))
                }
            case .pauseReading(let side):
                endpoint(side)?.spliceStopReading()
            case .resumeReading(let side):
                if let e = endpoint(side), !e.spliceStartReading() { execute(machine.readFailed(from: side)) }
            case .shutdownWrite(let side):
                if let e = endpoint(side), !e.spliceShutdownWrite() {
                    execute(machine.shutdownCompleted(side, failed: true))
                }
            case .armTimer(let deadline):
                let t = now
                do throws(RuntimeError) {
                    try timer?.start(after: deadline > t ? deadline - t : 1)
                } catch {
                    // Only a closing timer refuses, and the splice closes with it.
                }
            case .close(let why):
                finish(why)
            }
        }
    }

    private func timerFired() {
        execute(machine.timerFired(now: now))
    }

    private func finish(_ why: Outcome) {
        timer?.close()
        let c = client
        let u = upstream
        client = nil
        upstream = nil
        c?.spliceClose()
        u?.spliceClose()
        let done = onEnd
        onEnd = nil
        done?(why)
    }
}
