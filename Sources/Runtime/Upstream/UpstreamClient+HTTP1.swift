extension UpstreamClient {
    /// The pool of `origin`, made on first use. The last one used is checked first: a
    /// sidecar's requests nearly all go to one origin, and comparing a route's origin with
    /// itself compares shared strings, with no hashing.
    func http1Pool(for origin: UpstreamOrigin) -> HTTP1Pool {
        if let last = lastHTTP1Pool, last.origin == origin { return last }
        let pool: HTTP1Pool
        if let existing = http1Pools[origin] {
            pool = existing
        } else {
            pool = HTTP1Pool(client: self, origin: origin)
            http1Pools[origin] = pool
        }
        lastHTTP1Pool = pool
        return pool
    }
}
