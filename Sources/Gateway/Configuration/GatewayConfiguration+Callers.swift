public import Foundation

extension GatewayConfiguration {
    /// The callers a route serves (`routes[].callers`): whoever reaches an authenticated route
    /// borrows the session's identity, so a route can lend it to named callers only. On a
    /// Unix socket listener, by the kernel's credentials of the peer (`uids`, `gids`, or
    /// `users` and `groups` by name, resolved at start and at each reload); on TCP, by the
    /// peer's address (`addresses`: `10.0.0.0/8`, `fd00::/8`, or one address). Any one match
    /// admits; a caller not named gets 403 `caller-not-allowed` and nothing reaches the
    /// upstream. Absent: every caller that reaches the listener.
    ///
    /// ```json
    /// "callers": {"users": ["legacy-app"], "groups": ["billing"], "addresses": ["127.0.0.1"]}
    /// ```
    public struct Callers: Sendable, Codable, Equatable {
        /// User ids admitted on a Unix socket.
        public var uids: [UInt32]?
        /// Group ids admitted on a Unix socket (the peer's effective or a supplementary group).
        public var gids: [UInt32]?
        /// User names admitted on a Unix socket, resolved to their ids.
        public var users: [String]?
        /// Group names admitted on a Unix socket, resolved to their ids.
        public var groups: [String]?
        /// Networks (CIDR) or single addresses admitted on TCP.
        public var addresses: [String]?

        /// Callers of these kinds; each left nil names none.
        public init(
            uids: [UInt32]? = nil, gids: [UInt32]? = nil, users: [String]? = nil, groups: [String]? = nil,
            addresses: [String]? = nil
        ) {
            self.uids = uids
            self.gids = gids
            self.users = users
            self.groups = groups
            self.addresses = addresses
        }

        /// The rule these callers make, names resolved; throws naming the field (under
        /// `field`) of a name no user or group has, an address that is not one, or callers
        /// that name nobody.
        func rule(at field: String) throws(GatewayError) -> CallerRule {
            var uids = Set(self.uids ?? [])
            var gids = Set(self.gids ?? [])
            for (i, name) in (users ?? []).enumerated() {
                guard let id = Self.userID(name) else {
                    throw .invalid("\(field).users[\(i)]", "names no user of this system: \(name)")
                }
                uids.insert(id)
            }
            for (i, name) in (groups ?? []).enumerated() {
                guard let id = Self.groupID(name) else {
                    throw .invalid("\(field).groups[\(i)]", "names no group of this system: \(name)")
                }
                gids.insert(id)
            }
            var networks: [CallerRule.Network] = []
            for (i, text) in (addresses ?? []).enumerated() {
                guard let network = CallerRule.Network(text) else {
                    throw .invalid("\(field).addresses[\(i)]", "must be an IPv4 or IPv6 address or network (CIDR, 10.0.0.0/8)")
                }
                networks.append(network)
            }
            if uids.isEmpty && gids.isEmpty && networks.isEmpty {
                throw .invalid(
                    field, "names no caller: list uids, gids, users, groups or addresses (or remove it to admit every caller)")
            }
            return CallerRule(uids: uids, gids: gids, networks: networks)
        }

        /// The id of the user `name`, from the system's user database.
        static func userID(_ name: String) -> UInt32? {
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            var buffer = [CChar](repeating: 0, count: 16 * 1024)
            guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
            return entry.pw_uid
        }

        /// The id of the group `name`, from the system's group database.
        static func groupID(_ name: String) -> UInt32? {
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            var buffer = [CChar](repeating: 0, count: 64 * 1024)
            guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
            return entry.gr_gid
        }
    }
}
