import Synchronization

/// A Prometheus histogram of durations over ``GatewayMetrics/latencyBuckets``, recorded with
/// two relaxed atomic additions and no lock.
///
/// Every proxied request records one duration, and an authenticated one three more (its
/// phases), so the cost of a recording is paid on the request path. Durations are counted in
/// integer nanoseconds against bounds converted once; a bucket holds its own count, not a
/// running total, and the running totals are added up when `/metrics` renders. `_count` is
/// that same total, so `+Inf` and `_count` always agree, even while requests are recorded as
/// the exposition is read (`_sum` may then lag by the requests in between, as in any
/// lock-free Prometheus client).
final class LatencyHistogram: Sendable {
    /// The number of finite bounds (the size of ``Bounds``); ``Counts`` has one more, the
    /// last being `+Inf`'s own. A generic size cannot be written as another plus one, so
    /// `init` checks that the two agree.
    static var boundCount: Int { Bounds.count }
    /// The family's name, such as `authgate_request_duration_seconds`.
    let name: String
    /// The label pair (`route_kind="public"`), rendered once.
    let label: String
    private typealias Bounds = InlineArray<16, Int64>
    private typealias Counts = InlineArray<17, Atomic<Int>>
    private let bounds: Bounds
    private let counts = Counts { _ in Atomic(0) }
    private let sumNanoseconds = Atomic<Int64>(0)

    /// Creates an empty histogram named `name`, with the one label `labelName="labelValue"`.
    /// `bounds` are the upper bounds of the finite buckets, ascending, ``boundCount`` of them.
    init(name: String, labelName: String, labelValue: String, bounds: [Duration]) {
        precondition(bounds.count == Self.boundCount, "a latency histogram has \(Self.boundCount) bounds")
        precondition(
            Counts.count == Bounds.count + 1, "a latency histogram has one count per bound and one for +Inf")
        self.name = name
        self.label = "\(labelName)=\"\(labelValue)\""
        self.bounds = InlineArray { bounds[$0].wholeNanoseconds }
    }

    /// Counts one duration in the first bucket whose bound is at least it (`+Inf` past them all).
    func record(_ duration: Duration) {
        let ns = duration.wholeNanoseconds
        var i = 0
        while i < Self.boundCount, bounds[i] < ns { i += 1 }
        counts[i].wrappingAdd(1, ordering: .relaxed)
        sumNanoseconds.wrappingAdd(ns, ordering: .relaxed)
    }

    /// The running totals: how many recorded durations are at most each bound, then in all.
    var cumulativeCounts: [Int] {
        var total = 0
        return (0...Self.boundCount).map { i in
            total += counts[i].load(ordering: .relaxed)
            return total
        }
    }

    /// The `q` quantile (0…1) of the durations whose running totals are `cumulative` (as
    /// ``cumulativeCounts`` gives them, or a difference of two such), interpolated linearly
    /// within its bucket as Prometheus's `histogram_quantile` does; in the `+Inf` bucket, the
    /// largest finite bound. Nil when `cumulative` counts nothing.
    func quantile(_ q: Double, cumulative: [Int]) -> Duration? {
        guard let total = cumulative.last, total > 0 else { return nil }
        let rank = q * Double(total)
        guard let i = cumulative.firstIndex(where: { Double($0) >= rank }), i < Self.boundCount else {
            return .nanoseconds(bounds[Self.boundCount - 1])
        }
        let lower = i == 0 ? 0 : bounds[i - 1]
        let below = i == 0 ? 0 : cumulative[i - 1]
        let inBucket = cumulative[i] - below
        let share = inBucket > 0 ? (rank - Double(below)) / Double(inBucket) : 1
        return .nanoseconds(lower + Int64(Double(bounds[i] - lower) * share))
    }

    /// Appends the family in the text format: `# TYPE`, one `_bucket` line per bound and
    /// `+Inf`, `_sum` and `_count`. `withType` is false for every label set after a family's first.
    func render(into out: inout String, withType: Bool) {
        if withType { out += "# TYPE \(name) histogram\n" }
        let totals = cumulativeCounts
        for i in 0..<Self.boundCount {
            out += "\(name)_bucket{\(label),le=\"\(Self.seconds(bounds[i]))\"} \(totals[i])\n"
        }
        out += "\(name)_bucket{\(label),le=\"+Inf\"} \(totals[Self.boundCount])\n"
        out += "\(name)_sum{\(label)} \(Self.seconds(sumNanoseconds.load(ordering: .relaxed)))\n"
        out += "\(name)_count{\(label)} \(totals[Self.boundCount])\n"
    }

    /// Nanoseconds as decimal seconds with at least one fractional digit and no trailing
    /// zeros past it: `0.001`, `0.0025`, `1.0`, `120.0`.
    static func seconds(_ nanoseconds: Int64) -> String {
        let whole = nanoseconds / 1_000_000_000
        var fraction = nanoseconds % 1_000_000_000
        guard fraction != 0 else { return "\(whole).0" }
        var digits = 9
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        return "\(whole)." + String(repeating: "0", count: digits - text.count) + text
    }
}

extension Duration {
    /// The duration in whole nanoseconds; a negative one (never measured) counts as 0.
    ///
    /// Recorded on the request path (the latency histograms, the adaptive limit's samples):
    /// a duration under 18 s, every request's but the slowest, is divided as a 64-bit value,
    /// which the compiler does by a multiplication; `Duration.components` divides 128 bits.
    var wholeNanoseconds: Int64 {
        let attoseconds = self.attoseconds
        guard attoseconds > 0 else { return 0 }
        if let small = UInt64(exactly: attoseconds) { return Int64(small / 1_000_000_000) }
        let (seconds, fraction) = components
        return seconds &* 1_000_000_000 &+ fraction / 1_000_000_000
    }
}
