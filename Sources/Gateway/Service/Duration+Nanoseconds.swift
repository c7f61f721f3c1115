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
