import Glibc

/// What to do with whatever is at a Unix socket's path before binding it. A pure value:
/// ``UnixSocketFile`` looks at the path and tries to connect; this decides.
///
/// A socket file a crashed process left behind makes `bind` fail with `EADDRINUSE`. It is
/// removed only when nobody answers on it, so a second instance never steals the socket of
/// one that runs; anything that is not a socket is never removed.
public enum StaleSocketRule {
    /// What is at the path.
    public enum Found: Sendable, Equatable {
        /// Nothing: the path is free.
        case nothing
        /// A socket file.
        case socket
        /// A file of another kind (regular file, directory, link, …).
        case notSocket
    }

    /// What a connection attempt to a socket file gave.
    public enum Probe: Sendable, Equatable {
        /// `ECONNREFUSED`: nobody listens; a crash left the file.
        case refused
        /// Someone accepted, or its backlog is full (`EAGAIN`): it is alive.
        case answered
        /// `ENOENT`: the file went away meanwhile.
        case vanished
        /// Another error (a negative errno), such as `EACCES`: nothing can be concluded.
        case failed(Int32)
    }

    /// The decision.
    public enum Action: Sendable, Equatable {
        /// Bind: the path is free.
        case bind
        /// Remove the stale socket file, then bind.
        case removeThenBind
        /// Do not bind; fail with this errno (negative, libuv style) and reason.
        case refuse(code: Int32, reason: String)
    }

    /// The action for what was found at the path, and (for a socket) what the probe gave.
    public static func action(found: Found, probe: Probe?) -> Action {
        switch (found, probe) {
        case (.nothing, _):
            return .bind
        case (.notSocket, _):
            return .refuse(code: -EEXIST, reason: "the path exists and is not a socket; it is left alone")
        case (.socket, .refused?):
            return .removeThenBind
        case (.socket, .vanished?):
            return .bind
        case (.socket, .answered?):
            return .refuse(code: -EADDRINUSE, reason: "another process is listening on this socket")
        case (.socket, .failed(let code)?):
            return .refuse(code: code, reason: "cannot tell whether another process listens on this socket")
        case (.socket, nil):
            return .refuse(code: -EADDRINUSE, reason: "a socket file is in the way and was not probed")
        }
    }
}
