import Foundation
import Glibc
import HTTPWire
import InMemoryTracing
import TestSupport
import Testing
import Tracing

@testable import Gateway
@testable import Runtime

/// Tracing's pure decisions (which trace fields go upstream, whether `OTEL_*` asks for
/// export), and the proxy's spans with an in-memory tracer over real sockets. The refresh and
/// replay spans, W3C propagation and the OTLP export are tested against a real `authgate
/// serve` and a real OTLP receiver: scripts/otlp-trace-test.
@Suite struct TracingTests {
    static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test(
        arguments: [
            // client fields, injected fields, expected outgoing fields
            (
                [("traceparent", parent), ("tracestate", "a=1")],
                [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01")],
                [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01")]
            ),
            (
                [("traceparent", parent), ("tracestate", "a=1")],
                [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"), ("tracestate", "a=1")],
                [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"), ("tracestate", "a=1")]
            ),
            // A tracer that injects nothing leaves the client's fields as they came.
            ([("traceparent", parent), ("tracestate", "a=1")], [], [("traceparent", parent), ("tracestate", "a=1")]),
            // No client context: ours is added.
            ([("accept", "*/*")], [("traceparent", parent)], [("accept", "*/*"), ("traceparent", parent)]),
            // A tracer with fields of its own keeps the client's W3C fields.
            ([("traceparent", parent)], [("x-trace", "7")], [("traceparent", parent), ("x-trace", "7")]),
        ] as [([(String, String)], [(String, String)], [(String, String)])])
    func propagatedFields(client: [(String, String)], injected: [(String, String)], expected: [(String, String)]) {
        var headers = HTTPHeaders(client.map { (name: $0.0, value: $0.1) })
        TracePropagation.apply(HTTPHeaders(injected.map { (name: $0.0, value: $0.1) }), to: &headers)
        #expect(headers.fields.map { "\($0.name): \($0.value)" } == expected.map { "\($0.0): \($0.1)" })
    }

    @Test(
        arguments: [
            ([:], false),
            (["OTEL_TRACES_EXPORTER": "otlp"], true),
            (["OTEL_TRACES_EXPORTER": "none"], false),
            (["OTEL_TRACES_EXPORTER": " OTLP "], true),
            (["OTEL_TRACES_EXPORTER": "none,console"], true),
            (["OTEL_TRACES_EXPORTER": ""], false),
            (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"], false),
            (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "false"], true),
            // An endpoint alone does not turn export on: off by default.
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"], false),
        ] as [([String: String], Bool)])
    func exportIsOffUnlessATracesExporterIsNamed(environment: [String: String], expected: Bool) {
        #expect(TracingSwitch.exportRequested(environment: environment) == expected)
    }

    @Test(
        arguments: [
            (["OTEL_TRACES_EXPORTER": "otlp"], nil),
            (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"], nil),
            (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"], nil),
            (
                ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"],
                Refusal.grpc("OTEL_EXPORTER_OTLP_PROTOCOL")
            ),
            (
                ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "GRPC"],
                Refusal.grpc("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            ),
            // The traces-specific variable wins, either way.
            (
                [
                    "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                ], nil
            ),
            (
                [
                    "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
                ],
                Refusal.grpc("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            ),
            (
                ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "parentbased_jaeger_remote"],
                Refusal.sampler("parentbased_jaeger_remote")
            ),
            (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "Jaeger_Remote"], Refusal.sampler("jaeger_remote")),
            (["OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio"], nil),
            // The protocol is refused before the sampler.
            (
                ["OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_SAMPLER": "jaeger_remote"],
                Refusal.grpc("OTEL_EXPORTER_OTLP_PROTOCOL")
            ),
            // Export off: nothing to refuse.
            (["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], nil),
            (["OTEL_TRACES_EXPORTER": "none", "OTEL_TRACES_SAMPLER": "jaeger_remote"], nil),
        ] as [([String: String], Refusal?)])
    func whatThisBuildCannotExportIsRefusedNamingTheVariable(environment: [String: String], expected: Refusal?) {
        let problem = TracingSwitch.unsupported(environment: environment)
        #expect(problem?.code == (expected == nil ? nil : GatewayError.Code.unsupported))
        #expect(problem?.field == expected?.field)
        #expect(problem?.message == expected?.message)
        // Nothing set it through AUTHGATE_* or a flag: the description is the message.
        #expect(problem?.source == nil)
        #expect(problem?.description == expected?.message)
    }

    /// A refusal expected of ``TracingSwitch/unsupported(environment:)``: the variable and the sentence.
    struct Refusal: Sendable, CustomTestStringConvertible {
        let field: String
        let message: String
        var testDescription: String { field }

        static func grpc(_ variable: String) -> Refusal {
            Refusal(
                field: variable, message: "\(variable)=grpc: this build exports over OTLP/HTTP only (http/protobuf or http/json)")
        }

        static func sampler(_ value: String) -> Refusal {
            Refusal(
                field: "OTEL_TRACES_SAMPLER",
                message:
                    "OTEL_TRACES_SAMPLER=\(value): not supported (always_on, always_off, traceidratio and their parentbased_ forms are)"
            )
        }
    }

    @Test(arguments: [
        ("https://idp.example/oauth/token", "idp.example"),
        ("http://127.0.0.1:8080/token?x=1", "127.0.0.1:8080"),
        ("https://user:pw@idp.example:8443/t", "idp.example:8443"),
        ("http://[::1]:9/t#f", "[::1]:9"),
    ])
    func tokenEndpointAddressHasNoPathQueryOrUserInfo(url: String, authority: String) {
        #expect(TokenEndpointTrace.authority(url) == authority)
    }

    @Test func noTracerIsInstalledByDefault() {
        #expect(TracingSwitch.installed == nil)
    }

    @Test func aProxiedRequestIsAServerSpanWithAChildPerUpstreamTryWhoseContextGoesUpstream() async throws {
        let tracer = InMemoryTracer()
        try await withTracedProxy(tracer) { port in
            let c = try RawClient(port: port)
            try c.send(
                "GET /api/inspect?access_token=SECRET-QUERY HTTP/1.1\r\nHost: h\r\n"
                    + "in-memory-trace-id: client-trace\r\nin-memory-span-id: client-span\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.status == 200)
            let spans = try await finished(tracer, count: 2)
            let server = try #require(spans.first { $0.kind == .server })
            let upstream = try #require(spans.first { $0.kind == .client })
            #expect(server.operationName == "GET /api")
            #expect(server.traceID == "client-trace")
            #expect(server.parentSpanID == "client-span")
            #expect(upstream.traceID == "client-trace")
            #expect(upstream.parentSpanID == server.spanID)
            #expect(server.attributes["http.route"]?.toSpanAttribute() == .string("/api"))
            #expect(server.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            #expect(server.attributes["authgate.replayed"]?.toSpanAttribute() == .bool(false))
            #expect(upstream.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            #expect(upstream.attributes["authgate.attempt"]?.toSpanAttribute() == .int64(0))
            // The upstream got the upstream span's context, not the client's.
            #expect(r.text.contains("in-memory-trace-id: client-trace"))
            #expect(r.text.contains("in-memory-span-id: \(upstream.spanID)"))
            #expect(!r.text.contains("in-memory-span-id: client-span"))
            // No attribute carries the query.
            for span in spans {
                // SpanAttributes has its own forEach and is no Sequence.
                // swift-format-ignore: ReplaceForEachWithForLoop
                span.attributes.forEach { _, value in #expect(!"\(value)".contains("SECRET")) }
            }
        }
    }

    /// A try whose answer AuthGate held back is marked with why, beside the upstream's own
    /// status (a refused proof's 401, though the client got AuthGate's 502).
    @Test(arguments: [
        (HeldAnswer.forRefresh, "authgate.token_rejected"),
        (.forNonce, "authgate.dpop_nonce_requested"), (.proofRefused, "authgate.dpop_proof_refused"),
    ])
    func aHeldAnswerMarksItsTrySpanWithWhy(_ held: HeldAnswer, _ attribute: String) throws {
        let tracer = InMemoryTracer()
        let group = try EventLoopGroup(loopCount: 1, name: "traced-held")
        defer { group.shutdown() }
        let route = ProxyRoute(prefix: "/api", upstream: UpstreamOrigin("http://127.0.0.1:1")!, requiresAuthentication: true)
        let request = HTTPRequest(
            head: RequestHead(method: "GET", target: "/api/x"), body: .buffered([]), remoteAddress: "127.0.0.1:1",
            loop: group.loops[0])
        let trace = RequestTrace(tracer: tracer, request: request, route: route, path: "/api/x")
        var headers = HTTPHeaders()
        trace.upstream(&headers, route: route).ended(ExchangeOutcome.held(held, status: 401))
        // The request's own span ends too, as the request does (an unended in-memory span
        // keeps its tracer alive).
        trace.end(status: 502)
        let span = try #require(tracer.finishedSpans.first { $0.kind == .client })
        #expect(span.attributes[attribute]?.toSpanAttribute() == .bool(true))
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(401))
        for other in ["authgate.token_rejected", "authgate.dpop_nonce_requested", "authgate.dpop_proof_refused"]
        where other != attribute {
            #expect(span.attributes[other] == nil, "\(other)")
        }
    }

    @Test func aFailedUpstreamTryIsAnErrorSpanAndTheRequestWithoutClientContextStartsATrace() async throws {
        let tracer = InMemoryTracer()
        let closed = try loopbackListener()
        let deadPort = closed.port
        _ = Glibc.close(closed.fd)
        try await withTracedProxy(tracer, upstreamURL: "http://127.0.0.1:\(deadPort)") { port in
            let c = try RawClient(port: port)
            try c.send("GET /api/x HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try c.readResponse().status == 502)
            let spans = try await finished(tracer, count: 2)
            let server = try #require(spans.first { $0.kind == .server })
            let upstream = try #require(spans.first { $0.kind == .client })
            #expect(server.parentSpanID == nil)
            #expect(upstream.parentSpanID == server.spanID)
            #expect(upstream.status?.code == .error)
            #expect(upstream.attributes["error.type"] != nil)
            #expect(server.status?.code == .error)
        }
    }

    @Test func withTracingOffTheClientsTraceFieldsPassThroughUntouched() async throws {
        try await withTracedProxy(nil) { port in
            let c = try RawClient(port: port)
            try c.send("GET /api/inspect HTTP/1.1\r\nHost: h\r\ntraceparent: \(Self.parent)\r\ntracestate: a=1\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.text.contains("traceparent: \(Self.parent)"))
            #expect(r.text.contains("tracestate: a=1"))
        }
    }

    /// The spans the tracer finished, once there are `count` (the server span ends after the
    /// response is written, so it may trail the client's read by a moment).
    private func finished(_ tracer: InMemoryTracer, count: Int) async throws -> [FinishedInMemorySpan] {
        for _ in 0..<200 where tracer.finishedSpans.count < count {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(tracer.finishedSpans.count == count)
        return tracer.finishedSpans
    }

    private func withTracedProxy(
        _ tracer: (any Tracer)?, upstreamURL: String? = nil, _ body: (Int) async throws -> Void
    ) async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let group = try EventLoopGroup(loopCount: 1, name: "traced-proxy")
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: group,
            responder: ReverseProxy(
                routes: [ProxyRoute(prefix: "/api", upstream: UpstreamOrigin(upstreamURL ?? upstream.url)!)], tracer: tracer))
        try await server.listen()
        defer { group.shutdown() }
        try await body(server.port)
    }
}
