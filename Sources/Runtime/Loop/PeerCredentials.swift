import CLibUV
private import CProcess
import Glibc

/// Who is at the other end of a Unix domain socket, as the kernel recorded when it connected
/// (`SO_PEERCRED`): its process, user and group ids. Not forgeable by the peer, unlike anything
/// it sends.
public struct PeerCredentials: Sendable, Equatable {
    /// The peer's process id when it connected.
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id.
    public var gid: UInt32
    /// The peer's supplementary group ids when it connected (`SO_PEERGROUPS`), as `id -G`
    /// lists them beside ``gid``.
    public var groups: [UInt32]

    /// Credentials of these ids.
    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// Whether the peer is a member of group `id`, as its effective or a supplementary group.
    public func isMember(of id: UInt32) -> Bool {
        gid == id || groups.contains(id)
    }
}

extension LoopStream {
    /// The peer's credentials, for a connected Unix domain socket; nil for any other stream,
    /// or when the kernel does not say.
    func peerCredentials() -> PeerCredentials? {
        guard !isClosing else { return nil }
        var fd = uv_os_fd_t()
        guard uv_fileno(typed(uv_handle_t.self), &fd) == 0 else { return nil }
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        guard ag_socket_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
        // Most users are in a few groups; the kernel's limit (NGROUPS_MAX) is 65,536.
        for capacity in [64, 65_536] {
            var failure: Int32 = 0
            let groups = [UInt32](unsafeUninitializedCapacity: capacity) { buffer, count in
                let n = ag_socket_peer_groups(fd, buffer.baseAddress, Int32(capacity))
                count = max(0, Int(n))
                if n < 0 { failure = errno }
            }
            if failure != ERANGE { return PeerCredentials(pid: pid, uid: uid, gid: gid, groups: groups) }
        }
        return nil
    }
}

/// Who sent a request, as the connection knows it: the peer's address, and on a Unix domain
/// socket the credentials the kernel recorded for it.
public struct RequestPeer: Sendable, Equatable {
    /// `ip:port` (`[ip]:port` for IPv6), or `unix` on a Unix domain socket.
    public var address: String
    /// The peer's process, user and group ids on a Unix domain socket; nil on TCP.
    public var credentials: PeerCredentials?

    /// A peer at `address`, with `credentials` on a Unix domain socket.
    public init(address: String, credentials: PeerCredentials? = nil) {
        self.address = address
        self.credentials = credentials
    }
}
