/// Where an ``HTTPServer`` listens: a TCP address, or a Unix domain socket.
///
/// ```swift
/// var c = HTTPServerConfiguration(address: .unix(path: "/run/authgate/admin.sock", mode: 0o660))
/// ```
public enum ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// A TCP address (`127.0.0.1`, `0.0.0.0`, `::1`, …) and port; port 0 picks a free one.
    case tcp(host: String, port: Int)
    /// A Unix domain socket at an absolute `path`, made with the permission bits `mode`
    /// (such as `0o600`) before it accepts anyone.
    case unix(path: String, mode: UInt32)

    /// The longest socket path, in bytes: `sun_path` holds 108 bytes with the final NUL.
    public static let maxUnixPathBytes = 107

    /// `host:port` (`[host]:port` for IPv6), or `unix:PATH`.
    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path, _): "unix:\(path)"
        }
    }

    /// Whether this is a Unix domain socket.
    public var isUnix: Bool {
        if case .unix = self { return true }
        return false
    }
}
