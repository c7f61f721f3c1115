/// A request body read as it arrives.
///
/// The connection stops reading from the client while more than the high-water mark
/// is buffered here and resumes when the consumer has taken it, so a slow consumer
/// slows the client down instead of filling memory.
public final class BodyStream: Sendable {
    final class State {
        var chunks: [[UInt8]] = []
        var buffered = 0
        var finished = false
        var failure: (any Error)?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        var onDrain: (() -> Void)?
        var onReadable: (() -> Void)?
        /// Bytes of `chunks[0]` already taken by ``readNow(into:)``.
        var headOffset = 0
        let highWater: Int

        init(highWater: Int) { self.highWater = highWater }

        func deliver() {
            if let r = onReadable {
                onReadable = nil
                r()
            }
            guard let w = waiter else { return }
            if !chunks.isEmpty {
                waiter = nil
                if headOffset > 0 {
                    chunks[0].removeFirst(headOffset)
                    headOffset = 0
                }
                let out = chunks.count == 1 ? chunks[0] : Array(chunks.joined())
                chunks.removeAll(keepingCapacity: true)
                let wasFull = buffered >= highWater
                buffered = 0
                w.resume(returning: out)
                if wasFull { onDrain?() }
            } else if let failure {
                waiter = nil
                w.resume(throwing: failure)
            } else if finished {
                waiter = nil
                w.resume(returning: nil)
            }
        }
    }

    let state: LoopBound<State>

    init(loop: EventLoop, highWater: Int) {
        state = LoopBound(State(highWater: highWater), loop: loop)
    }

    /// The next bytes of the body, or nil at its end. Throws when the client went away
    /// or sent a malformed body.
    public func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<[UInt8]?, any Error>) in
            state.withValue { s in
                precondition(s.waiter == nil, "BodyStream.next() called concurrently")
                s.waiter = cont
                s.deliver()
            }
        }
    }

    /// Reads the rest of the body into memory; throws ``RuntimeError/Code/requestBodyTooLarge``
    /// past `maxBytes`, ``RuntimeError/Code/clientDisconnected`` when the client leaves.
    public func collect(maxBytes: Int) async throws -> [UInt8] {
        var out: [UInt8] = []
        while let chunk = try await next() {
            out += chunk
            if out.count > maxBytes { throw RuntimeError.requestBodyTooLarge(limit: maxBytes) }
        }
        return out
    }

    // Loop side.

    /// What ``readNow(into:)`` found.
    enum ReadResult {
        case bytes(Int)
        case empty, end, failed
    }

    /// Loop-only: copies buffered bytes into `buffer` without waiting.
    func readNow(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let s = state.value
        guard !s.chunks.isEmpty else {
            if s.failure != nil { return .failed }
            return s.finished ? .end : .empty
        }
        var written = 0
        let wasFull = s.buffered >= s.highWater
        while written < buffer.count, !s.chunks.isEmpty {
            let chunk = s.chunks[0]
            let n = min(buffer.count - written, chunk.count - s.headOffset)
            chunk.withUnsafeBytes { src in
                (buffer.baseAddress! + written).copyMemory(from: src.baseAddress! + s.headOffset, byteCount: n)
            }
            written += n
            s.headOffset += n
            if s.headOffset == chunk.count {
                s.chunks.removeFirst()
                s.headOffset = 0
            }
        }
        s.buffered -= written
        if wasFull && s.buffered < s.highWater { s.onDrain?() }
        return .bytes(written)
    }

    /// Loop-only: runs `f` once, when bytes arrive, the body ends or fails.
    func notifyWhenReadable(_ f: @escaping () -> Void) {
        state.value.onReadable = f
    }

    /// Whether the consumer is behind.
    var isFull: Bool { state.value.buffered >= state.value.highWater }

    func append(_ bytes: UnsafeRawBufferPointer) {
        let s = state.value
        s.chunks.append(Array(bytes))
        s.buffered += bytes.count
        s.deliver()
    }

    func finish() {
        let s = state.value
        s.finished = true
        s.deliver()
    }

    func fail(_ error: any Error) {
        let s = state.value
        if s.finished && s.chunks.isEmpty { return }
        s.failure = error
        s.deliver()
    }

    func setOnDrain(_ f: @escaping () -> Void) {
        state.value.onDrain = f
    }
}
