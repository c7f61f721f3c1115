/// A failed system call in ``AtomicFile``.
struct FileSystemError: Error, Sendable, Equatable {
    var errno: Int32
    var operation: String
}
