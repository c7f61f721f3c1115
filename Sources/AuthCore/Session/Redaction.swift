// Reflection (`dump`, debuggers' summaries, `Mirror`) must not reveal tokens either.

extension Credentials: CustomReflectable {
    /// A mirror without children: `dump` shows only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension TokenRecord: CustomReflectable {
    /// A mirror without children: `dump` shows only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension TokenResponse: CustomReflectable {
    /// A mirror without children: `dump` shows only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension AccessToken: CustomReflectable {
    /// A mirror without children: `dump` shows only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension Grant: CustomReflectable, CustomDebugStringConvertible {
    /// A mirror without children: `dump` shows only the grant type.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }

    /// Same as ``description``: secrets are never printed.
    public var debugDescription: String { description }
}

extension PKCEPair: CustomReflectable {
    /// A mirror without children: the verifier is secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension OAuth2Client.Configuration: CustomReflectable {
    /// A mirror without children: the client secret is secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension HTTPRequestValue: CustomReflectable {
    /// A mirror without children: headers and body may carry secrets.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension HTTPResponseValue: CustomReflectable {
    /// A mirror without children: headers and body may carry secrets.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension String {
    /// This text with every credential-shaped word replaced by `<redacted>`, for text that
    /// came from outside (a transport's message, an authorization server's description)
    /// before it is shown in a description or a log line.
    ///
    /// A word is a run of letters, digits and `-_~+/=`. It is redacted when it is 16 or more
    /// characters long with both a letter and a digit in it (what tokens, keys and secrets
    /// look like, a JWT's segments included), or when it follows `Bearer` or `Basic`. The
    /// text is cut at 512 characters.
    var redactingCredentials: String {
        func isWordCharacter(_ c: Character) -> Bool {
            c.isASCII && (c.isLetter || c.isNumber || "-_~+/=".contains(c))
        }
        var out = ""
        var word = ""
        var afterScheme = false
        func flush() {
            guard !word.isEmpty else { return }
            let credentialShaped = word.count >= 16 && word.contains(where: \.isLetter) && word.contains(where: \.isNumber)
            out += credentialShaped || afterScheme ? "<redacted>" : word
            let lower = word.lowercased()
            afterScheme = lower == "bearer" || lower == "basic"
            word = ""
        }
        for c in self.prefix(512) {
            if isWordCharacter(c) {
                word.append(c)
            } else {
                flush()
                out.append(c)
            }
        }
        flush()
        return count > 512 ? out + "…" : out
    }
}

extension AuthError: CustomReflectable {
    /// A mirror without children: `dump` shows only the description, in which outside text
    /// is redacted.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
