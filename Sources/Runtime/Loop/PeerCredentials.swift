import CLibUV
private import CProcess

/// Who is at the other end of a Unix domain socket, as the kernel recorded when it connected
/// (`SO_PEERCRED`): its process, user and group ids. Not forgeable by the peer, unlike anything
/// it sends.
public struct PeerCredentials: Sendable, Equatable {
    /// The peer's process id when it connected.
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id (its supplementary groups are not part of it).
    public var gid: UInt32

    /// Credentials of these ids.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
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
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}
