import AuthCore
import AuthGateTesting
import Foundation
import HTTPWire
import Locking
import Logging
import Runtime
import TestSupport

@testable import Gateway

/// Log lines kept in memory, to search them for secrets.
final class LogCapture: Sendable {
    let lines = Locked<[String]>([])
    var all: String { lines.withLock { $0.joined(separator: "\n") } }

    func logger(_ label: String = "authgate.test") -> Logger {
        Logger(label: label) { label in CapturingHandler(label: label, sink: self) }
    }
}

struct CapturingHandler: LogHandler {
    let label: String
    let sink: LogCapture
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let meta = (metadata.merging(event.metadata ?? [:]) { $1 }).map { "\($0)=\($1)" }.sorted().joined(separator: " ")
        sink.lines.withLock { $0.append("\(event.level) \(label) \(event.message) \(meta)") }
    }
}

/// Changes the stores a gateway opened before its sessions use them (a value, not a bare
/// closure, so that `startGateway`'s trailing closure stays `configure`).
struct StoreAdapter: Sendable {
    let adapt: @Sendable (GatewayStores) -> GatewayStores
}

/// A fake authorization server and a fake API over real HTTP, and the gateway in front,
/// all on loopback with ephemeral ports.
final class Stack: Sendable {
    static let adminToken = "test-admin-token-0123456789"
    /// The fake authorization server and API, on a loop of their own.
    let servers: FakeServers
    var fakes: EventLoopGroup { servers.group }
    var authorization: FakeAuthorizationServer { servers.authorization }
    var authServer: HTTPServer { servers.authorizationServer }
    var api: FakeResourceServer { servers.api }
    var apiServer: HTTPServer { servers.apiServer }
    let stateDirectory: String
    let keyFile: String
    let logs = LogCapture()
    let gateway = Locked<GatewayService?>(nil)
    /// The manual clock the authorization server, the API's token checks and the gateway's
    /// sessions share, when the stack was made with one: tokens then expire only when the
    /// test moves it, however slow the machine is.
    let clock: TestClock?
    let fakeConfiguration: FakeAuthorizationServer.Configuration

    init(
        fake: FakeAuthorizationServer.Configuration = FakeAuthorizationServer.Configuration(), stateDirectory: String? = nil,
        clock: TestClock? = nil
    ) async throws {
        self.clock = clock
        fakeConfiguration = fake
        servers = try await FakeServers(configuration: fake, clock: clock ?? SystemAuthClock())
        self.stateDirectory =
            stateDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("ag-\(UUID().uuidString)").path
        keyFile = self.stateDirectory + "/store.key"
    }

    var configuration: GatewayConfiguration {
        GatewayConfiguration(
            proxy: .init(host: "127.0.0.1", port: 0), admin: .init(host: "127.0.0.1", port: 0),
            authorization: .init(
                tokenEndpoint: "http://127.0.0.1:\(authServer.port)/oauth/token", clientID: "authgate",
                clientAuthentication: "basic"),
            routes: [
                .init(prefix: "/public", upstream: "http://127.0.0.1:\(apiServer.port)", requiresAuthentication: false),
                .init(prefix: "/", upstream: "http://127.0.0.1:\(apiServer.port)", requiresAuthentication: true),
            ],
            stateDirectory: stateDirectory, keyFile: keyFile, createKey: true, loops: 2)
    }

    /// Runs `body` with a stack of fakes (no gateway started yet), and stops everything after,
    /// whether `body` throws or not.
    static func run(
        fake: FakeAuthorizationServer.Configuration = FakeAuthorizationServer.Configuration(), clock: TestClock? = nil,
        _ body: (Stack) async throws -> Void
    ) async throws {
        let stack = try await Stack(fake: fake, clock: clock)
        do {
            try await body(stack)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// Starts (or restarts) the gateway over the same state directory.
    @discardableResult
    func startGateway(
        key: TokenStoreKey? = nil, session: AuthActor.Configuration = AuthActor.Configuration(skew: .zero, jitter: .zero),
        sessionSecrets: [String: String] = [:], accessLogger: Logger? = nil,
        adaptStores: StoreAdapter? = nil, background: BackgroundRunner? = nil,
        configure: (inout GatewayConfiguration) -> Void = { _ in }
    ) async throws -> GatewayService {
        var c = configuration
        configure(&c)
        try FileManager.default.createDirectory(
            atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let storeKey = try key ?? TokenStoreKey.load(fromFile: keyFile, createIfMissing: true)
        var startup = GatewayService.Startup(
            configuration: c,
            secrets: .init(
                clientSecret: "s3cret", adminToken: Stack.adminToken, storeKey: storeKey, sessionClientSecrets: sessionSecrets),
            logger: logs.logger(), clock: clock ?? SystemAuthClock(), sessionConfiguration: session,
            accessLogger: accessLogger ?? logs.logger("authgate.access"))
        if let adaptStores { startup.adaptStores = adaptStores.adapt }
        startup.background = background
        let service = try await GatewayService.start(startup)
        gateway.withLock { $0 = service }
        return service
    }

    /// Ends the lifetime of every access token issued so far, by moving the shared clock
    /// past it: the API rejects them from now on, and tokens issued after live a whole
    /// lifetime of the clock, which does not move by itself. Needs a stack with a clock.
    func expireAccessTokens() {
        guard let clock else { preconditionFailure("expireAccessTokens() needs a Stack made with a TestClock") }
        clock.advance(by: fakeConfiguration.accessTokenLifetime)
    }

    func stopGateway() async {
        if let g = gateway.withLock({ s -> GatewayService? in
            let g = s
            s = nil
            return g
        }) {
            // Each session's refresh, revocations and unsaved pair finish first: under a
            // sanitizer's load they can outlast shutdown's cap, and a task the stopped loops
            // then drop is reported as leaked. ShutdownDrainTests covers the cap itself.
            for session in g.sessions.values { await session.actor.finishBackgroundWork() }
            await g.shutdown(grace: .seconds(1))
        }
    }

    func stop() async {
        await stopGateway()
        // A test's hook may hold the stack itself: break that cycle.
        api.beforeCheckingTokens(nil)
        await servers.close()
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }

    var proxyPort: Int { gateway.withLock { $0!.proxyServer.port } }
    var adminPort: Int { gateway.withLock { $0!.adminServer.port } }

    /// One request on a fresh connection to the proxy.
    func proxy(_ method: String = "GET", _ path: String, headers: [String] = [], body: String = "") async throws -> TestResponse {
        let port = proxyPort
        return try await onThread { try Stack.request(port: port, method, path, headers: headers, body: body) }
    }

    /// One request to the admin API with the admin token (over TCP or its Unix socket).
    func admin(_ method: String, _ path: String, json: String? = nil, token: String? = Stack.adminToken) async throws
        -> TestResponse
    {
        var h: [String] = []
        if let token { h.append("Authorization: Bearer \(token)") }
        if json != nil { h.append("Content-Type: application/json") }
        let address = gateway.withLock { $0!.adminServer.address }
        let headers = h
        return try await onThread { try Stack.request(to: address, method, path, headers: headers, body: json ?? "") }
    }

    func loginAlice() async throws -> TestResponse {
        try await admin("POST", "/auth/login", json: #"{"grant_type":"password","username":"alice","password":"wonderland"}"#)
    }

    static func request(port: Int, _ method: String, _ path: String, headers: [String], body: String) throws -> TestResponse {
        try request(to: .tcp(host: "127.0.0.1", port: port), method, path, headers: headers, body: body)
    }

    /// One request on a fresh connection to a TCP port on loopback or a Unix socket.
    static func request(
        to address: ListenAddress, _ method: String, _ path: String, headers: [String], body: String
    ) throws -> TestResponse {
        // The answer can wait on the fakes, which run on the cooperative pool; under the
        // sanitizers the suite's other tests hold that pool for a minute and more, so a short
        // read timeout fails a request that is only late.
        let c: RawClient
        switch address {
        case .tcp(_, let port): c = try RawClient(port: port, timeoutSeconds: 180)
        case .unix(let path, _): c = try RawClient(unixPath: path, timeoutSeconds: 180)
        }
        var text = "\(method) \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
        for h in headers { text += h + "\r\n" }
        if !body.isEmpty || method == "POST" { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + body
        try c.send(text)
        return try c.readResponse(headRequest: method == "HEAD")
    }

    static func json(_ r: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]) ?? [:]
    }
}

/// Reads `GET /auth/events` on its own thread and keeps every byte received, so that a test
/// can wait for an event and search the whole stream.
final class EventStreamRecorder: Sendable {
    private let received = Locked<[UInt8]>([])
    private let socket = Locked<Int32?>(nil)

    /// Connects and starts reading; returns once the stream has begun (the server sends
    /// `retry:` right after subscribing), so no event published after this call is missed.
    init(port: Int, path: String = "/auth/events") async throws {
        let received = self.received
        let socket = self.socket
        let started = Locked<Result<Void, any Error>?>(nil)
        let thread = Thread {
            let client: RawClient
            do {
                client = try RawClient(port: port, timeoutSeconds: 60)
                try client.send(
                    "GET \(path) HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer \(Stack.adminToken)\r\nConnection: close\r\n\r\n"
                )
            } catch {
                started.withLock { $0 = .failure(error) }
                return
            }
            socket.withLock { $0 = client.fd }
            started.withLock { $0 = .success(()) }
            var chunk = [UInt8](repeating: 0, count: 16384)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                received.withLock { $0 += chunk[0..<n] }
            }
            socket.withLock { $0 = nil }
        }
        thread.start()
        guard await eventually({ started.withLock { $0 } != nil }) else { throw RecorderError.notConnected }
        try started.withLock { $0 }!.get()
        guard await eventually({ self.text.contains("retry: ") }) else { throw RecorderError.noStream(text) }
    }

    enum RecorderError: Error {
        case notConnected
        case noStream(String)
    }

    /// Everything received so far, head included.
    var text: String { received.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The `event:` names received so far, in order.
    var eventNames: [String] {
        text.split(separator: "\n").filter { $0.hasPrefix("event: ") }.map { String($0.dropFirst("event: ".count)) }
    }

    /// Waits until an event named `name` has arrived.
    func waitFor(event name: String) async -> Bool {
        await eventually { self.eventNames.contains(name) }
    }

    /// Closes the connection (the reading thread then ends).
    func stop() {
        socket.withLock { fd in
            if let fd { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }
}
