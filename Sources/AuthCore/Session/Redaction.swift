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
