import ArgumentParser
import Foundation
import Gateway

/// Options shared by the client subcommands, which call the admin API.
struct AdminOptions: ParsableArguments {
    @Option(help: "The admin API: a base URL, or unix:PATH for a Unix socket (unix:/run/authgate/admin.sock).")
    var admin = "http://127.0.0.1:8081"
    @Option(help: "A file holding the admin token (default: $AUTHGATE_ADMIN_TOKEN).") var tokenFile: String?
    @Option(help: "The session to address (default: the default session).") var session: String?

    /// Where `--admin` points.
    func endpoint() throws -> AdminEndpoint {
        do {
            return try AdminEndpoint(parsing: admin)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The admin token: `--token-file`'s, or `$AUTHGATE_ADMIN_TOKEN`.
    func token() throws -> String? {
        if let f = tokenFile { return try SecretSources.readFile(f, field: "--token-file") }
        return ProcessInfo.processInfo.environment["AUTHGATE_ADMIN_TOKEN"]
    }

    /// The one client a command calls the admin API with: `--admin`, with the admin token.
    func client() throws -> AdminClient {
        AdminClient(endpoint: try endpoint(), token: try token())
    }

    /// `path` with `?session=` when `--session` is given.
    func addressed(_ path: String) throws -> String {
        guard let session else { return path }
        // Session names are restricted to characters that need no escaping in a query.
        guard GatewayConfiguration.isValidSessionName(session) else {
            throw ValidationError("--session: 1–63 lower-case letters, digits, - or _")
        }
        return path + (path.contains("?") ? "&" : "?") + "session=" + session
    }

    /// Sends one request to the admin API and prints the answer (through `show` when it is
    /// a success, as it came otherwise); non-2xx exits 1.
    func call(_ method: String, _ path: String, body: [UInt8]? = nil, show: (String) -> String = { $0 }) async throws {
        let client = try client()
        let target = try addressed(path)
        let response = try await client.send(method, target, json: body)
        let text = String(decoding: response.body, as: UTF8.self)
        if !(200..<300).contains(response.status) {
            print(text)
            throw ExitCode(1)
        }
        print(show(text))
    }
}

/// `authgate status`: a summary for people, or the session document with `--json`.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the session (GET /auth/session): a summary, or its JSON document with --json.")
    @OptionGroup var options: AdminOptions
    @Flag(help: "Print the session document as JSON (for scripts).") var json = false
    func run() async throws {
        try await options.call("GET", "/auth/session") { text in
            json ? text : SessionSummary.format(text, now: Date()) ?? text
        }
    }
}

/// `authgate login`.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Log in (POST /auth/login).")
    @OptionGroup var options: AdminOptions
    @Option(
        help: """
            password, client_credentials, authorization_code, jwt-bearer (RFC 7523, the assertion from \
            authorization.jwtBearer.assertionFile), token-exchange (RFC 8693, the subject token from \
            authorization.tokenExchange.subjectTokenFile), device (RFC 8628: prints the code to enter and \
            where, and waits until the login completes or fails) or import.
            """) var grant = "password"
    @Flag(help: "Log in with the device grant: the same as --grant device.") var device = false
    @Option(help: "User name (password grant).") var username: String?
    @Option(help: "A file holding the password (password grant).") var passwordFile: String?
    @Option(help: "Authorization code (authorization_code grant).") var code: String?
    @Option(help: "PKCE code verifier (authorization_code grant).") var codeVerifier: String?
    @Option(help: "Redirect URI (authorization_code grant).") var redirectURI: String?
    @Option(help: "Scope.") var scope: String?

    func run() async throws {
        let grant = device ? "device" : grant
        var fields: [String: String] = ["grant_type": Self.grantTypes[grant] ?? grant]
        fields["username"] = username
        if let f = passwordFile { fields["password"] = try SecretSources.readFile(f, field: "--password-file") }
        fields["code"] = code
        fields["code_verifier"] = codeVerifier
        fields["redirect_uri"] = redirectURI
        fields["scope"] = scope
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = Array(try encoder.encode(fields))
        if grant == "device" {
            try await DeviceLoginCommand.run(options, body: body)
            return
        }
        try await options.call("POST", "/auth/login", body: body)
    }

    /// The short names `--grant` takes for the grants whose `grant_type` is a URN.
    static let grantTypes = [
        "jwt-bearer": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "token-exchange": "urn:ietf:params:oauth:grant-type:token-exchange",
        "device": "urn:ietf:params:oauth:grant-type:device_code",
    ]
}

/// `authgate logout`.
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Log out (POST /auth/logout).")
    @OptionGroup var options: AdminOptions
    func run() async throws { try await options.call("POST", "/auth/logout") }
}
