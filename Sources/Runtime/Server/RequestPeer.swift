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
