import Foundation
import TestSupport
import Testing

/// Request smuggling, checked where it matters: at the upstream. Each probe of
/// ``DesyncCase`` is sent on one raw connection to a real gateway with a logged-in session,
/// once on a public route and once on an authenticated one, each route in front of a
/// ``RecordingUpstream`` of its own. The client's answers are checked, and then every byte
/// the upstreams received: at most the requests that should pass, each framed on its own
/// by a strict reader, no second request hidden in a body or a half-read head, and the
/// session's token on exactly the authenticated requests that passed, never elsewhere.
///
/// The gateway is stopped before the upstreams are read, and the upstreams have seen every
/// connection close: whatever the gateway was going to send has arrived by then.
@Suite(.serialized) struct DesyncBatteryTests {
    @Test(arguments: DesyncCase.transferEncoding)
    func transferEncodingTricksAreRefusedBeforeTheUpstreamOrForwardedAsOneRequest(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.bareLineEnds)
    func bareCarriageReturnsAndLineFeedsAreRefusedBeforeTheUpstream(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.nulBytes)
    func nulBytesAreRefusedBeforeTheUpstreamExceptInsideALengthFramedBody(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.chunkSizes)
    func chunkLineQuirksAreRefusedBeforeTheUpstream(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.contentLengths)
    func contentLengthQuirksAreRefusedOrFramedAsTheUpstreamFramesThem(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.requestLines)
    func requestLineQuirksAreRefusedAndATargetsAuthorityNeverReachesTheUpstream(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.expectations)
    func expectContinueMixesForwardEachBodyOnceAndRefuseTheRest(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    @Test(arguments: DesyncCase.pipelining)
    func requestsPipelinedAfterARefusedOneNeverReachTheUpstream(_ probe: DesyncCase) async throws {
        try await Self.probeBothRoutes(probe)
    }

    /// The two kinds of route every probe runs on.
    enum Route: CaseIterable {
        case publicRoute, authenticatedRoute
        var prefix: String { self == .publicRoute ? "/public" : "/api" }
    }

    /// One stack, one login; per route a gateway started in front of two fresh recording
    /// upstreams (one per route), the probe sent, the gateway stopped, the upstreams read.
    static func probeBothRoutes(_ probe: DesyncCase) async throws {
        try await Stack.run { stack in
            var token: String?
            for route in Route.allCases {
                let publicUpstream = try RecordingUpstream()
                let apiUpstream = try RecordingUpstream()
                defer {
                    publicUpstream.stop()
                    apiUpstream.stop()
                }
                // The session survives the restart: its tokens are restored from the store.
                try await stack.startGateway { c in
                    c.routes = [
                        .init(prefix: "/public", upstream: publicUpstream.url, requiresAuthentication: false),
                        .init(prefix: "/api", upstream: apiUpstream.url, requiresAuthentication: true),
                    ]
                    c.loops = 1
                }
                if token == nil {
                    try #require(try await stack.loginAlice().status == 200)
                    token = await stack.authorization.issuedSecrets.accessTokens.last
                }
                let port = stack.proxyPort
                let bytes = probe.bytes(prefix: route.prefix)
                let expected = probe.expected
                let client = try await onThread {
                    ClientSide.exchange(port: port, bytes: bytes, expected: expected, waitsForContinue: probe.waitsForContinue)
                }
                await stack.stopGateway()
                let settled = await eventually(timeout: .seconds(30)) {
                    publicUpstream.allConnectionsClosed && apiUpstream.allConnectionsClosed
                }
                #expect(settled, "\(route): the upstreams' connections closed after the gateway stopped")
                let (mine, other) = route == .publicRoute ? (publicUpstream, apiUpstream) : (apiUpstream, publicUpstream)
                checkClient(client, probe, route)
                checkUpstream(mine, other: other, probe, route, token: try #require(token))
            }
        }
    }

    /// The client got the expected answers; a refusal is problem+json with its precise
    /// status, and the connection ends after it.
    static func checkClient(_ client: ClientSide, _ probe: DesyncCase, _ route: Route) {
        let expected = probe.expected
        #expect(client.failure == nil, "\(route): \(client.failure ?? "")")
        if probe.waitsForContinue { #expect(client.interim.first == 100, "\(route): 100 Continue before the body was sent") }
        #expect(client.responses.map(\.status) == expected.statuses, "\(route): statuses")
        for (i, r) in client.responses.enumerated() where r.status == 200 {
            #expect(r.text == RecordingUpstream.responseBody, "\(route): answer \(i) is the upstream's")
        }
        guard expected.refuses, let refusal = client.responses.last, client.responses.count == expected.statuses.count else {
            return
        }
        #expect(refusal.header("content-type") == "application/problem+json", "\(route): a problem")
        #expect(Stack.json(refusal)["status"] as? Int == expected.statuses.last, "\(route): the problem's status")
        #expect(refusal.header("connection")?.lowercased() == "close", "\(route): Connection: close")
        #expect(client.closedAfter == true, "\(route): the connection ended after the refusal, with nothing more on it")
    }

    /// The route's upstream framed exactly the requests that should pass, each on its own,
    /// with the session's token only on the authenticated route; the other upstream got
    /// nothing; nothing in `neverUpstream` reached either.
    static func checkUpstream(
        _ mine: RecordingUpstream, other: RecordingUpstream, _ probe: DesyncCase, _ route: Route, token: String
    ) {
        let forwarded = probe.expected.forwarded
        let requests = mine.requests
        #expect(other.allBytes.isEmpty, "\(route)\(upstreamCheck)the other route's upstream got \(text(other.allBytes))")
        for connection in mine.connections {
            #expect(
                connection.malformed == nil && connection.unframed.isEmpty,
                """
                \(route)\(upstreamCheck)upstream connection \(connection.id) left bytes a strict server cannot frame \
                (\(connection.malformed ?? "incomplete")): \(text(connection.unframed))
                """)
        }
        #expect(
            requests.map { "\($0.method) \($0.target)" } == forwarded.map { "\($0.method) \(route.prefix)\($0.path)" },
            "\(route)\(upstreamCheck)the requests the upstream framed")
        for (request, wanted) in zip(requests, forwarded) {
            #expect(request.body == wanted.body, "\(route)\(upstreamCheck)\(request.target)'s body: \(text(request.body))")
            let authorization = request.values(of: "authorization")
            #expect(
                authorization == (route == .authenticatedRoute ? ["Bearer \(token)"] : []),
                "\(route)\(upstreamCheck)\(request.target) carries the session's token exactly when its route is authenticated")
        }
        if forwarded.isEmpty {
            #expect(
                mine.allBytes.isEmpty, "\(route)\(upstreamCheck)nothing reached the upstream, yet it got \(text(mine.allBytes))")
        }
        let all = String(decoding: mine.allBytes + other.allBytes, as: UTF8.self)
        let tokens = all.components(separatedBy: token).count - 1
        let passed = route == .authenticatedRoute ? forwarded.count : 0
        #expect(
            tokens == passed, "\(route)\(upstreamCheck)the token went upstream \(tokens) times for \(passed) requests that passed"
        )
        for word in probe.neverUpstream {
            #expect(!all.contains(word), "\(route)\(upstreamCheck)\"\(word)\" reached the upstream")
        }
    }

    /// What every upstream check's message says after the route.
    static let upstreamCheck = " at the upstream: "

    static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(400), as: UTF8.self).debugDescription
    }
}

/// What a probe's client saw: final answers in order, whether the connection then ended.
struct ClientSide: Sendable {
    var responses: [TestResponse] = []
    var interim: [Int] = []
    var closedAfter: Bool?
    var failure: String?

    /// Sends `bytes` (the head first, and the rest after `100 Continue` when
    /// `waitsForContinue`), reads as many final answers as expected, skipping 1xx, and for a
    /// refusal whether the server then ends the connection with nothing more on it.
    static func exchange(port: Int, bytes: [UInt8], expected: DesyncCase.Expected, waitsForContinue: Bool) -> ClientSide {
        var seen = ClientSide()
        do {
            let c = try RawClient(port: port, timeoutSeconds: 180)
            if waitsForContinue, let end = bytes.firstRange(of: [13, 10, 13, 10]) {
                try c.send(Array(bytes[..<end.upperBound]))
                seen.interim.append(try c.readResponse().status)
                try c.send(Array(bytes[end.upperBound...]))
            } else {
                try c.send(bytes)
            }
            while seen.responses.count < expected.statuses.count {
                let r = try c.readResponse()
                if (100..<200).contains(r.status) {
                    seen.interim.append(r.status)
                } else {
                    seen.responses.append(r)
                    // Nothing is read past a refusal: the connection must end there.
                    if r.status >= 400 { break }
                }
            }
            // Whether the connection ends after a refusal (not after an answer that should have
            // been one: a kept-alive connection would only time out).
            if expected.refuses, let last = seen.responses.last, last.status >= 400 { seen.closedAfter = c.isClosedByPeer() }
        } catch {
            seen.failure = "\(error)"
        }
        return seen
    }
}
