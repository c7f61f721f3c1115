import Glibc

/// The bytes of the access log line being built, written through a pointer: each piece is a
/// capacity check and a `memcpy` (or a few stores), where appending to an `[UInt8]` checks
/// uniqueness and capacity through generic code every time. Grows as a line needs (a target
/// can be long) and is kept for the next line.
final class AccessLogBuffer {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// How many bytes the line has so far.
    private(set) var count = 0

    /// An empty buffer with room for `capacity` bytes before it grows.
    init(capacity: Int = 512) {
        self.capacity = max(16, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The line so far.
    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Empties the buffer, keeping its memory.
    func removeAll() { count = 0 }

    @inline(__always)
    private func reserve(_ n: Int) {
        if count + n > capacity { grow(count + n) }
    }

    private func grow(_ needed: Int) {
        let larger = max(needed, capacity * 2)
        let new = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        new.update(from: base, count: count)
        base.deallocate()
        base = new
        capacity = larger
    }

    /// Appends one byte.
    @inline(__always)
    func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    /// Appends `bytes`.
    @inline(__always)
    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    /// Appends the bytes of a literal.
    @inline(__always)
    func append(_ literal: StaticString) {
        append(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends the UTF-8 of `s` (named apart from the `StaticString` `append(_:)`, so that a
    /// literal is copied from the binary rather than made into a `String`).
    func appendUTF8(_ s: String) {
        var s = s
        s.withUTF8 { append($0) }
    }

    /// Appends `value` in decimal, as `String(value)` spells it.
    func appendDecimal(_ value: Int) {
        if value < 0 {
            append(UInt8(ascii: "-"))
        }
        appendDecimal(UInt64(value.magnitude))
    }

    /// Appends `value` in decimal, as `String(value)` spells it.
    func appendDecimal(_ value: UInt64) {
        var digits = 1
        var limit: UInt64 = 10
        while digits < 20 && value >= limit {
            digits += 1
            limit = limit &* 10
        }
        reserve(digits)
        var v = value
        var i = count + digits - 1
        repeat {
            base[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
            v /= 10
            i -= 1
        } while v > 0
        count += digits
    }
}
