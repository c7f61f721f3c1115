import CLibUV
import Glibc

/// Resolves a host and port to a socket address on libuv's thread pool
/// (`uv_getaddrinfo`), answering on the loop. An IP address is converted at once, with no
/// lookup.
enum LoopResolver {
    /// A resolved address.
    struct Address {
        var storage = sockaddr_storage()

        /// Calls `body` with the address as a `sockaddr`.
        func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) throws(RuntimeError) -> T) throws(RuntimeError) -> T {
            var copy = storage
            return try withUnsafePointer(to: &copy) { p throws(RuntimeError) in
                try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { s throws(RuntimeError) in try body(s) }
            }
        }
    }

    /// The address of an IPv4 or IPv6 literal, or nil for a name.
    static func literal(_ host: String, port: Int) -> Address? {
        var address = Address()
        let ok = withUnsafeMutablePointer(to: &address.storage) { p -> Bool in
            if p.withMemoryRebound(to: sockaddr_in.self, capacity: 1, { uv_ip4_addr(host, Int32(port), $0) }) == 0 {
                return true
            }
            return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1, { uv_ip6_addr(host, Int32(port), $0) }) == 0
        }
        return ok ? address : nil
    }

    private final class Pending {
        let done: (Result<Address, RuntimeError>) -> Void
        init(_ done: @escaping (Result<Address, RuntimeError>) -> Void) { self.done = done }
    }

    /// Resolves `host`; `done` runs on the loop with the first stream address, or the error.
    static func resolve(
        _ host: String, port: Int, on loop: UnsafeMutablePointer<uv_loop_t>,
        _ done: @escaping (Result<Address, RuntimeError>) -> Void
    ) {
        if let address = literal(host, port: port) {
            done(.success(address))
            return
        }
        let req = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
        req.pointee.data = Unmanaged.passRetained(Pending(done)).toOpaque()
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        // SOCK_STREAM, 1 on Linux: naming the constant here hides it from the rest of the module
        // under whole-module optimisation (Swift 6.3), so the value is written out.
        hints.ai_socktype = 1
        let rc = uv_getaddrinfo(
            loop, req,
            { req, status, info in
                // Invariant: libuv passes back the request, whose `data` holds the retained callback.
                let pending = Unmanaged<Pending>.fromOpaque(req!.pointee.data).takeRetainedValue()
                req!.deallocate()
                defer { if let info { uv_freeaddrinfo(info) } }
                guard status == 0, let first = info, let sa = first.pointee.ai_addr else {
                    pending.done(.failure(.libuv(status == 0 ? -EAI_NONAME : status, "uv_getaddrinfo")))
                    return
                }
                var address = Address()
                withUnsafeMutablePointer(to: &address.storage) {
                    UnsafeMutableRawPointer($0).copyMemory(from: sa, byteCount: Int(first.pointee.ai_addrlen))
                }
                pending.done(.success(address))
            }, host, String(port), &hints)
        if rc < 0 {
            Unmanaged<Pending>.fromOpaque(req.pointee.data).release()
            req.deallocate()
            done(.failure(.libuv(rc, "uv_getaddrinfo")))
        }
    }
}
