import CCurl

/// One libcurl easy handle (`CURL *`): made in `init`, cleaned up in `deinit`. Every
/// option and call checks libcurl's result code and throws ``RuntimeError/Code/curlFailed``.
///
/// Must be out of any multi handle when its last reference goes (``CurlMulti/remove(_:)``).
/// Loop-confined, like the client that uses it.
final class CurlEasy {
    /// The handle. Invariant: non-nil (`init` throws instead) and valid until `deinit`.
    let handle: UnsafeMutableRawPointer

    /// Makes a handle; throws when libcurl cannot (out of memory).
    init() throws(RuntimeError) {
        guard let handle = curl_easy_init() else { throw .curl(CURLE_FAILED_INIT, "curl_easy_init") }
        self.handle = handle
    }

    deinit {
        // curl_easy_cleanup returns void.
        curl_easy_cleanup(handle)
    }

    /// Forgets every option, keeping the connection, DNS and TLS session caches.
    func reset() {
        // curl_easy_reset returns void.
        curl_easy_reset(handle)
    }

    /// Sets a `long` option.
    func set(_ option: CURLoption, _ value: Int) throws(RuntimeError) {
        try check(ag_easy_setopt_long(handle, option, value), option)
    }

    /// Sets a `curl_off_t` option (`…_LARGE`).
    func set(_ option: CURLoption, offset value: Int64) throws(RuntimeError) {
        try check(ag_easy_setopt_offset(handle, option, curl_off_t(value)), option)
    }

    /// Sets a string option; libcurl copies the string.
    func set(_ option: CURLoption, _ value: String) throws(RuntimeError) {
        try check(ag_easy_setopt_string(handle, option, value), option)
    }

    /// Sets a blob option (`CURLOPT_SSLCERT_BLOB`, …); libcurl copies the bytes.
    func set(_ option: CURLoption, blob bytes: [UInt8]) throws(RuntimeError) {
        let rc = bytes.withUnsafeBytes { buffer in
            var blob = curl_blob(
                data: UnsafeMutableRawPointer(mutating: buffer.baseAddress), len: buffer.count,
                flags: UInt32(CURL_BLOB_COPY))
            return ag_easy_setopt_pointer(handle, option, &blob)
        }
        try check(rc, option)
    }

    /// Sets a header list; `list` must outlive the transfer.
    func set(_ option: CURLoption, _ list: CurlHeaderList) throws(RuntimeError) {
        try check(ag_easy_setopt_slist(handle, option, list.head), option)
    }

    /// Sets a data callback (`function`, such as `CURLOPT_WRITEFUNCTION`) and the pointer it
    /// receives (`data`, such as `CURLOPT_WRITEDATA`).
    func set(
        _ function: CURLoption, _ callback: ag_data_callback, _ data: CURLoption, user: UnsafeMutableRawPointer
    ) throws(RuntimeError) {
        try check(ag_easy_setopt_pointer(handle, data, user), data)
        try check(ag_easy_setopt_data_callback(handle, function, callback), function)
    }

    /// Sets the callback that closes the sockets of this handle's connections, and the
    /// pointer it receives.
    func setCloseSocket(_ callback: ag_closesocket_callback, user: UnsafeMutableRawPointer) throws(RuntimeError) {
        try check(ag_easy_setopt_pointer(handle, CURLOPT_CLOSESOCKETDATA, user), CURLOPT_CLOSESOCKETDATA)
        try check(ag_easy_setopt_closesocket_callback(handle, callback), CURLOPT_CLOSESOCKETFUNCTION)
    }

    /// Pauses or continues the transfer (`CURLPAUSE_CONT`, …).
    func pause(_ bitmask: Int32) throws(RuntimeError) {
        let rc = curl_easy_pause(handle, bitmask)
        if rc != CURLE_OK { throw .curl(rc, "curl_easy_pause") }
    }

    private func check(_ rc: CURLcode, _ option: CURLoption) throws(RuntimeError) {
        if rc != CURLE_OK { throw .curl(rc, "curl_easy_setopt(\(option.rawValue))") }
    }
}

/// A libcurl header list (`struct curl_slist *`), freed in `deinit`.
final class CurlHeaderList {
    /// The first element; nil while empty.
    private(set) var head: UnsafeMutablePointer<curl_slist>?

    /// An empty list.
    init() {}

    deinit {
        // curl_slist_free_all returns void (and takes nil).
        curl_slist_free_all(head)
    }

    /// Appends one header line (`Name: value`); libcurl copies it.
    func append(_ line: String) throws(RuntimeError) {
        guard let appended = curl_slist_append(head, line) else {
            throw .curl(CURLE_OUT_OF_MEMORY, "curl_slist_append")
        }
        head = appended
    }
}
