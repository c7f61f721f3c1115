public import Foundation
internal import Locking
internal import Synchronization

/// Whether this machine's clock is far from the servers' that check its DPoP proofs: a
/// proof's `iat` must be close to the server's time (RFC 9449 §11.1), so a clock minutes off
/// makes every proof refused. When a server refuses a proof (`invalid_dpop_proof`), the
/// `Date` of its answer (RFC 9110 §6.6.1) says how far apart the clocks are; an offset
/// beyond ``threshold`` is kept until a server accepts a proof again.
///
/// Reading ``isSkewed`` is one relaxed atomic load: the proxy asks on every answer to a
/// DPoP request.
public final class ClockSkewWatch: Sendable {
    /// How far apart the clocks may be before the offset is reported: proofs are usually
    /// accepted within a minute or so; thirty seconds reports a clock before it fails.
    public static let threshold: Duration = .seconds(30)

    private let flagged = Atomic<Bool>(false)
    private let offset = Locked<Duration?>(nil)

    /// A watch that has seen nothing.
    public init() {}

    /// How far a server's clock is from this one (positive: the server's is ahead), given
    /// the `Date` field of its answer at `now`; nil without a readable date.
    public static func offset(serverDate: String?, now: Date) -> Duration? {
        guard let serverDate, let date = HTTPDate.parse(serverDate, now: now) else { return nil }
        return .interval(date.timeIntervalSince(now))
    }

    /// A server refused a proof; `serverDate` is the `Date` of its answer. Returns the
    /// clocks' offset when it is beyond ``threshold`` (and keeps it), else nil.
    @discardableResult
    public func proofRefused(serverDate: String?, now: Date = Date()) -> Duration? {
        guard let offset = Self.offset(serverDate: serverDate, now: now), Self.beyondThreshold(offset) else { return nil }
        self.offset.withLock { $0 = offset }
        flagged.store(true, ordering: .relaxed)
        return offset
    }

    /// A server refused a proof, and its clock was `offset` from this one.
    public func proofRefused(offset: Duration) {
        guard Self.beyondThreshold(offset) else { return }
        self.offset.withLock { $0 = offset }
        flagged.store(true, ordering: .relaxed)
    }

    /// A server accepted a proof: the clocks agree well enough.
    public func proofAccepted() {
        guard flagged.load(ordering: .relaxed) else { return }
        offset.withLock { $0 = nil }
        flagged.store(false, ordering: .relaxed)
    }

    /// Whether a server's clock was found beyond ``threshold`` and none has accepted a proof since.
    public var isSkewed: Bool { flagged.load(ordering: .relaxed) }

    /// The last offset found beyond ``threshold``, while ``isSkewed``.
    public var skew: Duration? { offset.withLock { $0 } }

    private static func beyondThreshold(_ offset: Duration) -> Bool {
        offset > threshold || offset < .zero - threshold
    }
}
