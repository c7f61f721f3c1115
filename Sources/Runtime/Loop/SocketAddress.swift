import CLibUV
import Glibc

/// Socket address helpers over libuv's.
enum SocketAddress {
    /// Fills `storage` from a textual IPv4 or IPv6 address and a port; throws
    /// ``RuntimeError/Code/listenFailed`` for text that is not an address.
    static func make(host: String, port: Int, into storage: inout sockaddr_storage) throws(RuntimeError) {
        let rc: Int32
        if host.contains(":") {
            rc = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_addr(host, Int32(port), $0) }
            }
        } else {
            rc = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_addr(host, Int32(port), $0) }
            }
        }
        try RuntimeError.checkListen(rc, "parse address \(host)")
    }

    /// `ip:port` (or `[ip]:port`) of an address; `unknown` for one libuv cannot name.
    static func describe(_ storage: UnsafeMutablePointer<sockaddr_storage>) -> String {
        var name = [CChar](repeating: 0, count: 64)
        if storage.pointee.ss_family == sa_family_t(AF_INET6) {
            return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                guard uv_ip6_name(sin6, &name, name.count) == 0 else { return "unknown" }
                return "[\(text(name))]:\(UInt16(bigEndian: sin6.pointee.sin6_port))"
            }
        }
        return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
            guard uv_ip4_name(sin, &name, name.count) == 0 else { return "unknown" }
            return "\(text(name)):\(UInt16(bigEndian: sin.pointee.sin_port))"
        }
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The port an address names.
    static func port(_ storage: UnsafeMutablePointer<sockaddr_storage>) -> Int {
        if storage.pointee.ss_family == sa_family_t(AF_INET6) {
            return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
        return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
    }
}
