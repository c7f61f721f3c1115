/// Where a plain `http://` URL points and what to send as its request target: the part of
/// an upstream URL the loop's own HTTP/1.1 client needs. Pure.
struct HTTP1Origin: Hashable, Sendable {
    /// The host: a name, an IPv4 address or an IPv6 address without brackets.
    let host: String
    /// The port (80 when the URL names none).
    let port: Int
    /// `host:port` as the URL wrote it, for the `Host` field.
    let authority: String

    /// The origin and request target of `url`, or nil when the URL is not one this client
    /// serves: not `http://`, with user information, or without a valid host or port.
    static func parse(_ url: String) -> (origin: HTTP1Origin, target: String)? {
        guard url.hasPrefix("http://") else { return nil }
        let rest = url.utf8.dropFirst(7)
        let end = rest.firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? rest.endIndex
        let authority = Substring(rest[rest.startIndex..<end])
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var target = String(Substring(rest[end...]))
        if let hash = target.firstIndex(of: "#") { target = String(target[..<hash]) }
        if target.isEmpty || target.hasPrefix("?") { target = "/" + target }
        let host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        var port = 80
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let p = Int(portText),
                (1...65535).contains(p)
            else { return nil }
            port = p
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return (HTTP1Origin(host: String(host), port: port, authority: String(authority)), target)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
