/// A reference that may cross threads but whose value is used only on its loop.
///
/// `@unchecked Sendable` is safe because `value` checks that the caller is on `loop`
/// and every mutation goes through it.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop the value belongs to.
    public let loop: EventLoop
    private let _value: Value

    /// Wraps `value`; call on `loop`.
    public init(_ value: Value, loop: EventLoop) {
        precondition(loop.inEventLoop)
        self._value = value
        self.loop = loop
    }

    /// The value; only on `loop`.
    public var value: Value {
        precondition(loop.inEventLoop, "loop-bound value used off its loop")
        return _value
    }

    /// The value when called on `loop`, else nil. For callers that are usually on the loop:
    /// they call the value directly and form a closure for ``withValue(_:)`` only off it (a
    /// closure with captures is an allocation even when it runs at once).
    public var valueIfOnLoop: Value? { loop.inEventLoop ? _value : nil }

    /// Runs `body` with the value on the loop: now when already there, else soon.
    public func withValue(_ body: @escaping @Sendable (Value) -> Void) {
        if loop.inEventLoop {
            body(_value)
        } else {
            let me = self
            loop.execute { body(me.value) }
        }
    }
}
