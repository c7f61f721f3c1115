import CLibUV

extension EventLoop {
    /// The loop's clock in milliseconds (`uv_now`): the time this turn of the loop began,
    /// cached by libuv, so reading it costs no system call. Loop thread only.
    var now: UInt64 { uv_now(uv) }
}
