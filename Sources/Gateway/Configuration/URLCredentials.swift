/// Finds and hides a password in the user-info of a URL as written in a configuration,
/// without a URL parser: a password may hold `#`, `/`, `?` or `@` unencoded, which parsers
/// read as the start of a fragment, path or query, so that they see no password at all.
enum URLCredentials {
    /// The range of the password in `url` (`scheme://user:PASSWORD@…`), if it has one. The
    /// user-info runs from after `://` to the last `@` of the URL: an `@` cannot stand
    /// unencoded after it, so whatever precedes the last one is user-info.
    static func passwordRange(in url: String) -> Range<String.Index>? {
        guard let scheme = url.range(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        guard let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") else { return nil }
        return url.index(after: colon)..<at
    }

    /// Whether `url` holds a password (an empty one counts: `user:@host`).
    static func hasPassword(_ url: String) -> Bool { passwordRange(in: url) != nil }

    /// `url` with its password, if any, replaced by `<redacted>`.
    static func redacted(_ url: String) -> String {
        guard let range = passwordRange(in: url) else { return url }
        var out = url
        out.replaceSubrange(range, with: "<redacted>")
        return out
    }
}
