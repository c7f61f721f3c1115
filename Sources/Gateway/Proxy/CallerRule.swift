import Foundation
public import Runtime

/// Which callers a route serves: by the kernel's credentials on a Unix domain socket (user
/// and group ids, `SO_PEERCRED`) and by address on TCP (networks in CIDR notation). Whoever
/// reaches an authenticated route borrows the session's identity; a route that names its
/// callers lends it to them alone. Pure.
///
/// A caller is admitted when any one rule names it: on a Unix socket its uid is in ``uids``
/// or one of its groups (effective or supplementary) in ``gids``; on TCP its address is in one of ``networks``. A rule of one kind
/// never admits a caller of the other (a route with only uids admits nobody over TCP).
///
/// ```swift
/// let rule = try CallerRule(uids: [1000], gids: [], networks: ["10.0.0.0/8"])
/// rule.admits(RequestPeer(address: "unix", credentials: .init(pid: 7, uid: 1000, gid: 1000)))  // true
/// rule.admits(RequestPeer(address: "10.1.2.3:5000"))                                         // true
/// ```
public struct CallerRule: Sendable, Equatable {
    /// User ids admitted on a Unix socket.
    public let uids: Set<UInt32>
    /// Group ids admitted on a Unix socket (the peer's effective or a supplementary group).
    public let gids: Set<UInt32>
    /// Networks admitted on TCP.
    public let networks: [Network]

    /// A network: an address and how many of its leading bits must match.
    public struct Network: Sendable, Equatable, CustomStringConvertible {
        /// The address's bytes: 4 for IPv4, 16 for IPv6.
        let bytes: [UInt8]
        /// The prefix length.
        let prefix: Int

        /// Parses `10.0.0.0/8`, `fd00::/8`, or an address alone (every bit must match). Nil
        /// for anything else, or a prefix longer than the address.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard var bytes = Self.address(String(parts[0]), unmapping: false) else { return nil }
            let bits = bytes.count * 8
            var prefix = bits
            if parts.count == 2 {
                guard parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(parts[1]), (0...bits).contains(n) else {
                    return nil
                }
                prefix = n
            }
            // An IPv4-mapped network is the IPv4 network it maps (peers are compared unmapped).
            let mapped = Self.unmapped(bytes)
            if mapped.count == 4 && bytes.count == 16 {
                bytes = mapped
                prefix = max(0, prefix - 96)
            }
            self.bytes = bytes
            self.prefix = prefix
        }

        /// Whether `address` (4 or 16 bytes) is in the network; an IPv4-mapped IPv6 address
        /// (`::ffff:a.b.c.d`) is its IPv4 address.
        func contains(_ address: [UInt8]) -> Bool {
            let a = Self.unmapped(address)
            guard a.count == bytes.count else { return false }
            var left = prefix
            for i in 0..<a.count where left > 0 {
                let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
                if a[i] & mask != bytes[i] & mask { return false }
                left -= 8
            }
            return true
        }

        public var description: String {
            let text = bytes.count == 4 ? bytes.map(String.init).joined(separator: ".") : Self.ipv6(bytes)
            return "\(text)/\(prefix)"
        }

        /// The bytes of a literal IPv4 or IPv6 address (brackets allowed around IPv6); an
        /// IPv4-mapped IPv6 address as its IPv4 bytes when `unmapping`.
        static func address(_ text: String, unmapping: Bool = true) -> [UInt8]? {
            var t = text
            if t.hasPrefix("[") && t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
            var v4 = in_addr()
            if inet_pton(AF_INET, t, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, t, &v6) == 1 {
                let bytes = withUnsafeBytes(of: &v6) { Array($0) }
                return unmapping ? unmapped(bytes) : bytes
            }
            return nil
        }

        static func unmapped(_ a: [UInt8]) -> [UInt8] {
            guard a.count == 16, a[0..<10].allSatisfy({ $0 == 0 }), a[10] == 0xFF, a[11] == 0xFF else { return a }
            return Array(a[12..<16])
        }

        private static func ipv6(_ bytes: [UInt8]) -> String {
            var storage = in6_addr()
            withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes) }
            var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &storage, &out, socklen_t(out.count)) != nil else { return "?" }
            return String(cString: out)
        }
    }

    /// A rule admitting these users, groups and networks.
    public init(uids: Set<UInt32>, gids: Set<UInt32>, networks: [Network]) {
        self.uids = uids
        self.gids = gids
        self.networks = networks
    }

    /// Whether `peer` is one of the callers named.
    public func admits(_ peer: RequestPeer) -> Bool {
        if let c = peer.credentials { return uids.contains(c.uid) || gids.contains(where: c.isMember(of:)) }
        guard !networks.isEmpty, let address = Self.address(ofPeer: peer.address) else { return false }
        return networks.contains { $0.contains(address) }
    }

    /// The address bytes of `ip:port` or `[ip]:port`; nil for `unix` and anything else.
    static func address(ofPeer text: String) -> [UInt8]? {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return Network.address(String(text[text.index(after: text.startIndex)..<close]))
        }
        guard let colon = text.lastIndex(of: ":") else { return Network.address(text) }
        return Network.address(String(text[..<colon]))
    }
}
