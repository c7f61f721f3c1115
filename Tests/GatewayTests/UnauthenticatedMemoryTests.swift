import AuthGateTesting
import Foundation
import Gateway
import TestSupport
import Testing

/// Requests nobody is entitled to are answered after their head: no body is buffered for them.
@Suite struct UnauthenticatedMemoryTests {
    /// Sends only a head announcing a large body and reads the answer, which must come
    /// without the body ever being sent.
    func answerToHeadAlone(port: Int, _ head: String) async throws -> TestResponse {
        try await onThread {
            let c = try RawClient(port: port)
            try c.send(head)
            return try c.readResponse()
        }
    }

    @Test func aRequestMatchingNoRouteIsAnswered404BeforeItsBody() async throws {
        try await Stack.run { stack in
            try await stack.startGateway {
                $0.routes = [.init(prefix: "/api", upstream: "http://127.0.0.1:\(stack.apiServer.port)")]
            }
            let r = try await answerToHeadAlone(
                port: stack.proxyPort, "POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n")
            #expect(r.status == 404)
            #expect(r.header("Connection") == "close")
        }
    }

    @Test func anAdminRequestWithoutTheTokenIsAnswered401BeforeItsBody() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            let r = try await answerToHeadAlone(
                port: stack.adminPort,
                "POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n")
            #expect(r.status == 401)
            // With the token, the same head waits for its body (nothing answered yet).
            let waited = try await onThread { () -> Bool in
                let c = try RawClient(port: stack.adminPort, timeoutSeconds: 1)
                try c.send(
                    "POST /auth/login HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Stack.adminToken)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n")
                return (try? c.readResponse()) == nil
            }
            #expect(waited)
        }
    }
}
