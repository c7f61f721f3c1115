/// One of the two byte streams a ``Splice`` joins, as the splice drives it. The endpoint
/// reports what happens on it back to its splice (``Splice/received(_:_:)``,
/// ``Splice/readEnded(_:failed:)``, ``Splice/writeCompleted(_:failed:)``,
/// ``Splice/shutdownCompleted(_:failed:)``, ``Splice/closedOutside(_:)``). Loop-confined.
protocol SpliceEndpoint: AnyObject {
    /// Starts (again) reading; false when the stream cannot be read.
    func spliceStartReading() -> Bool
    /// Stops reading until ``spliceStartReading()``.
    func spliceStopReading()
    /// Writes `bytes`: whether they left at once, were queued (a completion follows) or the
    /// write failed.
    func spliceWrite(_ bytes: UnsafeRawBufferPointer) -> SpliceWriteResult
    /// Bytes queued for this stream, not yet taken by the kernel.
    var spliceQueuedBytes: Int { get }
    /// Shuts down the sending side after the queued writes; false when that cannot start.
    func spliceShutdownWrite() -> Bool
    /// Closes the stream; the endpoint forgets its splice and reports nothing more.
    func spliceClose()
}

/// What became of one write to a ``SpliceEndpoint``.
enum SpliceWriteResult: Equatable {
    /// The kernel took every byte.
    case sent
    /// Some bytes wait in the write queue; a completion follows.
    case queued
    /// The write failed; no completion follows.
    case failed
}
