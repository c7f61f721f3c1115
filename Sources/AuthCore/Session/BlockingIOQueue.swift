internal import Dispatch

/// Runs blocking file I/O (`fsync` can take milliseconds) on a serial dispatch queue, so it
/// neither blocks a thread of Swift's small cooperative pool nor an event loop, and so the
/// writes of one store never overlap.
struct BlockingIOQueue: Sendable {
    private let queue: DispatchQueue

    init(label: String) {
        self.queue = DispatchQueue(label: label)
    }

    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}
