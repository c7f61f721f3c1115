import CLibUV

/// Owns one libuv handle: its memory is allocated on the heap here and freed only in its
/// close callback, after libuv is done with it.
///
/// While the handle is open, the handle's `data` holds a strong reference to this object,
/// so the callbacks of a handle always find their owner, whoever else still holds it.
/// ``close(then:)`` is the only way to release it; a handle never closed keeps the loop
/// running, and ``EventLoop/shutdown()`` names it on stderr. The subclasses (``LoopStream``
/// and ``LoopTCP``, ``LoopTimer``, ``LoopPoll``, ``LoopAsync``, ``LoopIdle``,
/// ``StreamListener``) add the calls of one handle type, each checking its return code.
///
/// Loop-confined: use it on the thread of the loop it was made on (``LoopAsync/send()``
/// excepted).
class LoopHandle {
    /// The handle's memory. Valid from `init` until the close callback; nothing reads it
    /// once ``isClosing`` is true.
    let memory: UnsafeMutableRawPointer
    /// Whether ``close(then:)`` was called.
    private(set) var isClosing = false
    private var onClosed: (() -> Void)?

    /// Allocates a `Handle` and registers it with its loop by `initialise` (a `uv_*_init`
    /// call, which receives the memory); throws `operation`'s error when it fails, after
    /// freeing the memory, which libuv never saw.
    init<Handle>(_ type: Handle.Type, _ operation: String, _ initialise: (UnsafeMutablePointer<Handle>) -> Int32)
        throws(RuntimeError)
    {
        let typed = UnsafeMutablePointer<Handle>.allocate(capacity: 1)
        let rc = initialise(typed)
        if rc < 0 {
            typed.deallocate()
            throw .libuv(rc, operation)
        }
        memory = UnsafeMutableRawPointer(typed)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// The handle as libuv's base type.
    var handle: UnsafeMutablePointer<uv_handle_t> { UnsafeMutablePointer(OpaquePointer(memory)) }

    /// The handle as `Handle` (the type it was created as).
    func typed<Handle>(_: Handle.Type) -> UnsafeMutablePointer<Handle> { UnsafeMutablePointer(OpaquePointer(memory)) }

    /// The owner of a handle, from a libuv callback's handle pointer.
    static func owner<Owner: LoopHandle, Handle>(_: Owner.Type, _ handle: UnsafeMutablePointer<Handle>?) -> Owner {
        // Invariant: libuv passes the handle the callback was registered on (never nil), and
        // its `data` was set to a retained `Owner` in `init`, released only in the close
        // callback, after which libuv calls nothing on it.
        let base = UnsafeMutablePointer<uv_handle_t>(OpaquePointer(handle!))
        return Unmanaged<Owner>.fromOpaque(base.pointee.data!).takeUnretainedValue()
    }

    /// Closes the handle; its memory is freed and `then` runs in the close callback, on a
    /// later turn of the loop. Further calls do nothing.
    func close(then: (() -> Void)? = nil) {
        guard !isClosing else { return }
        isClosing = true
        onClosed = then
        willClose()
        // uv_close returns void: it cannot fail on an open handle, and `isClosing` keeps
        // it from seeing one twice.
        uv_close(handle) { handle in
            // Invariant: as in `owner`: `data` holds the reference `init` retained.
            let owner = Unmanaged<LoopHandle>.fromOpaque(handle!.pointee.data!).takeRetainedValue()
            owner.closed()
        }
    }

    /// Called by ``close(then:)`` before `uv_close`: subclasses drop their callbacks here.
    func willClose() {}

    private func closed() {
        memory.deallocate()
        let done = onClosed
        onClosed = nil
        done?()
    }
}
