import CCurl

/// One libcurl multi handle (`CURLM *`) driven by the socket API. Every call checks
/// libcurl's result code and throws ``RuntimeError/Code/curlFailed``.
///
/// ``close()`` cleans the handle up explicitly, because libcurl calls the socket and
/// close-socket callbacks from inside it and their owner must still be alive then;
/// `deinit` does it for a handle never closed. Loop-confined.
final class CurlMulti {
    /// The handle; nil once closed.
    private var handle: UnsafeMutableRawPointer?

    /// Makes a handle; throws when libcurl cannot (out of memory).
    init() throws(RuntimeError) {
        guard let handle = curl_multi_init() else { throw .curlMulti(CURLM_OUT_OF_MEMORY, "curl_multi_init") }
        self.handle = handle
    }

    deinit {
        try? close()
    }

    /// Whether ``close()`` ran.
    var isClosed: Bool { handle == nil }

    private func open(_ operation: String) throws(RuntimeError) -> UnsafeMutableRawPointer {
        guard let handle else { throw .curlMulti(CURLM_BAD_HANDLE, operation) }
        return handle
    }

    /// Sets a `long` option.
    func set(_ option: CURLMoption, _ value: Int) throws(RuntimeError) {
        try check(ag_multi_setopt_long(try open("curl_multi_setopt"), option, value), "curl_multi_setopt(\(option.rawValue))")
    }

    /// Sets the socket and timer callbacks and the pointer both receive.
    func setCallbacks(
        socket: ag_socket_callback, timer: ag_timer_callback, user: UnsafeMutableRawPointer
    ) throws(RuntimeError) {
        let multi = try open("curl_multi_setopt")
        try check(ag_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, user), "curl_multi_setopt(SOCKETDATA)")
        try check(ag_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, user), "curl_multi_setopt(TIMERDATA)")
        try check(ag_multi_setopt_socket_callback(multi, socket), "curl_multi_setopt(SOCKETFUNCTION)")
        try check(ag_multi_setopt_timer_callback(multi, timer), "curl_multi_setopt(TIMERFUNCTION)")
    }

    /// Adds a transfer.
    func add(_ easy: CurlEasy) throws(RuntimeError) {
        try check(curl_multi_add_handle(try open("curl_multi_add_handle"), easy.handle), "curl_multi_add_handle")
    }

    /// Takes a transfer out (done or cancelled).
    func remove(_ easy: CurlEasy) throws(RuntimeError) {
        try check(curl_multi_remove_handle(try open("curl_multi_remove_handle"), easy.handle), "curl_multi_remove_handle")
    }

    /// Tells libcurl that `socket` is ready (`flags`: `CURL_CSELECT_…`), or that its timer
    /// expired (`CURL_SOCKET_TIMEOUT`, flags 0).
    func socketAction(_ socket: curl_socket_t, _ flags: Int32) throws(RuntimeError) {
        var running: Int32 = 0
        let multi = try open("curl_multi_socket_action")
        try check(curl_multi_socket_action(multi, socket, flags, &running), "curl_multi_socket_action")
    }

    /// The transfers that finished since the last call: each easy handle and its result.
    func completed() -> [(easy: UnsafeMutableRawPointer, result: CURLcode)] {
        guard let handle else { return [] }
        var done: [(easy: UnsafeMutableRawPointer, result: CURLcode)] = []
        var pending: Int32 = 0
        // curl_multi_info_read returns nil when there is nothing (more) to read.
        while let message = curl_multi_info_read(handle, &pending) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            done.append((easy, message.pointee.data.result))
        }
        return done
    }

    /// Cleans the handle up (libcurl closes its pooled connections through the
    /// close-socket callback meanwhile). Later calls do nothing.
    func close() throws(RuntimeError) {
        guard let handle else { return }
        self.handle = nil
        try check(curl_multi_cleanup(handle), "curl_multi_cleanup")
    }

    private func check(_ rc: CURLMcode, _ operation: String) throws(RuntimeError) {
        if rc != CURLM_OK { throw .curlMulti(rc, operation) }
    }
}
