import Foundation
public import Runtime

extension GatewayConfiguration {
    /// A listening address: TCP, `{ "host": "127.0.0.1", "port": 8081 }`, or a Unix domain
    /// socket, `{ "unix": "/run/authgate/admin.sock", "mode": "0660" }`.
    ///
    /// A socket's `mode` is a string of octal digits (default `"0600"`: owner only). Connecting
    /// to a Unix socket needs write permission on it, so the mode says who may call: the owner,
    /// the group (`0660`); never others, whose digit must be 0.
    public struct Listener: Sendable, Codable, Equatable {
        /// The TCP address (`127.0.0.1`, `0.0.0.0`, `::1`); with `port`, instead of `unix`.
        public var host: String?
        /// The TCP port (0 picks a free one); with `host`.
        public var port: Int?
        /// The absolute path of a Unix domain socket, instead of `host` and `port`.
        public var unix: String?
        /// The socket file's permission bits, octal digits (default `"0600"`).
        public var mode: String?

        /// A TCP listener.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// A Unix domain socket listener; `mode` defaults to `"0600"`.
        public init(unix: String, mode: String? = nil) {
            self.unix = unix
            self.mode = mode
        }

        /// The mode of a socket whose `mode` is not set: owner only.
        public static let defaultUnixMode: UInt32 = 0o600

        /// The permission bits `mode` names: 1–4 octal digits, at most `0777`; nil otherwise.
        public static func parseMode(_ text: String) -> UInt32? {
            guard (1...4).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x37).contains($0) }),
                let value = UInt32(text, radix: 8), value <= 0o777
            else { return nil }
            return value
        }

        /// The socket's permission bits (the default when `mode` is not set), or nil for TCP
        /// or a `mode` that does not parse.
        public var unixMode: UInt32? {
            guard unix != nil else { return nil }
            guard let mode else { return Self.defaultUnixMode }
            return Self.parseMode(mode)
        }

        /// Whether only the socket's owner may connect: a Unix socket with no group or other bits.
        public var isOwnerOnlySocket: Bool {
            guard let bits = unixMode else { return false }
            return bits & 0o077 == 0
        }

        /// What is wrong with this listener, as an error naming the field (`admin.unix`), or nil.
        /// Pure: the socket's directory is checked by ``GatewayConfiguration/checkListenerDirectories(isDirectory:)``.
        public func error(at field: String) -> GatewayError? {
            if let unix {
                if host != nil || port != nil {
                    return .at(field, .conflict, "set either host and port, or unix, not both")
                }
                if !unix.hasPrefix("/") { return .invalid("\(field).unix", "must be an absolute path") }
                if unix.hasSuffix("/") { return .invalid("\(field).unix", "must name a socket file, not a directory") }
                if unix.utf8.contains(0) { return .invalid("\(field).unix", "must not contain a NUL byte") }
                let bytes = unix.utf8.count
                if bytes > ListenAddress.maxUnixPathBytes {
                    return .invalid(
                        "\(field).unix", "is \(bytes) bytes long; a socket path has at most \(ListenAddress.maxUnixPathBytes)")
                }
                guard let bits = unixMode else {
                    return .invalid("\(field).mode", "must be octal digits no wider than 0777, such as \"0600\" or \"0660\"")
                }
                if bits & 0o007 != 0 {
                    return .invalid(
                        "\(field).mode",
                        "\(mode ?? "") lets others connect; its last digit must be 0 (such as \"0600\" or \"0660\")")
                }
                return nil
            }
            if mode != nil { return .conflict("\(field).mode", "is only for a Unix socket (\(field).unix)") }
            switch (host, port) {
            case (nil, nil): return .at(field, .missingField, "set host and port, or unix")
            case (_, nil): return .required("\(field).port", "is required with \(field).host")
            case (nil, _): return .required("\(field).host", "is required with \(field).port")
            case (let host?, let port?):
                if !(0...65535).contains(port) { return .invalid("\(field).port", "must be 0…65535") }
                // Listeners bind a literal address; a name such as localhost is not resolved.
                if !GatewayConfiguration.isIPAddress(host) {
                    return .invalid("\(field).host", "must be an IPv4 or IPv6 address, such as 127.0.0.1 or ::1")
                }
                return nil
            }
        }

        /// Where to listen; throws when the listener is not valid (see ``error(at:)``).
        public func address(at field: String) throws(GatewayError) -> ListenAddress {
            if let error = error(at: field) { throw error }
            if let unix, let bits = unixMode { return .unix(path: unix, mode: bits) }
            return .tcp(host: host ?? "", port: port ?? 0)
        }
    }

    /// Every configured listener with its field name: `proxy`, `admin`, then `probes` and
    /// `metrics` when set.
    public var listeners: [(field: String, listener: Listener)] {
        [("proxy", proxy), ("admin", admin)] + (probes.map { [("probes", $0)] } ?? [])
            + (metrics.map { [("metrics", $0)] } ?? [])
    }

    /// Checks what ``validate()`` cannot without the file system: the directory of every
    /// Unix socket exists (bind would fail with a misleading `EACCES` otherwise).
    public func checkListenerDirectories(isDirectory: (String) -> Bool = Self.isDirectory) throws(GatewayError) {
        for (field, listener) in listeners {
            guard let path = listener.unix else { continue }
            let directory = (path as NSString).deletingLastPathComponent
            if !isDirectory(directory) {
                throw .at("\(field).unix", .unusablePath, "the directory \(directory) does not exist")
            }
        }
    }

    /// Whether `path` is a directory (following links).
    public static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
