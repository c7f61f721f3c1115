public import AuthCore

/// The proxy's sessions by name, looked up on every authenticated request.
///
/// A configuration has a handful of sessions, so they are kept in a list and compared by
/// name: two equal names of up to fifteen bytes (`default`, most names) are equal in their
/// raw bits, which `==` compares first, so a lookup costs a few comparisons where a `Set`
/// or `Dictionary` would hash the name (SipHash, about 150 instructions) every time.
public struct SessionDirectory: Sendable {
    /// The names, in the order of ``actors``.
    let names: [String]
    /// The sessions; nil in a directory of names only (``ExchangePlan``'s decisions).
    let actors: [AuthActor]?

    /// A directory of names only: whether a route's session exists.
    public init(names: some Sequence<String>) {
        self.names = Array(names)
        self.actors = nil
    }

    /// A directory of `sessions`.
    public init(_ sessions: [String: AuthActor]) {
        let sorted = sessions.sorted { $0.key < $1.key }
        names = sorted.map(\.key)
        actors = sorted.map(\.value)
    }

    /// Whether a session is named `name`.
    public func contains(_ name: String) -> Bool {
        index(of: name) != nil
    }

    /// The session named `name`, if there is one (and this directory holds sessions).
    public func session(named name: String) -> AuthActor? {
        guard let actors, let i = index(of: name) else { return nil }
        return actors[i]
    }

    private func index(of name: String) -> Int? {
        var i = 0
        while i < names.count {
            if names[i] == name { return i }
            i += 1
        }
        return nil
    }
}
