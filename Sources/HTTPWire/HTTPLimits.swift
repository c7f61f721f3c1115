/// Size limits applied while a request is read.
public struct HTTPLimits: Sendable, Equatable {
    /// The request line and header fields together; over this → 431.
    public var maxHeadBytes: Int
    /// The request target; over this → 414.
    public var maxTargetBytes: Int
    /// Number of header fields; over this → 431.
    public var maxHeaderCount: Int
    /// A body a route buffers in memory; over this → 413.
    public var maxBufferedBodyBytes: Int

    /// Creates limits; the defaults are the documented ones.
    public init(
        maxHeadBytes: Int = 16 * 1024,
        maxTargetBytes: Int = 8 * 1024,
        maxHeaderCount: Int = 100,
        maxBufferedBodyBytes: Int = 8 * 1024 * 1024
    ) {
        self.maxHeadBytes = maxHeadBytes
        self.maxTargetBytes = maxTargetBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
    }
}
