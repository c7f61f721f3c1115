import Testing

/// One request-smuggling probe: raw bytes a client sends on one connection, what the client
/// must be answered, and what an upstream must receive, on a public and on an
/// authenticated route alike (``DesyncBatteryTests``).
struct DesyncCase: Sendable, CustomTestStringConvertible {
    /// What the case tries, in a few words.
    let name: String
    /// The bytes, with `{P}` standing for the route's prefix (`/public` or `/api`).
    let template: String
    /// What must happen.
    let expected: Expected
    /// Text that must never reach the upstream, in any byte (`smuggled` always).
    let neverUpstream: [String]
    /// The client sends the bytes up to the end of the first head, waits for `100 Continue`,
    /// then sends the rest.
    let waitsForContinue: Bool

    var testDescription: String { name }

    init(
        _ name: String, _ template: String, _ expected: Expected, neverUpstream: [String] = [], waitsForContinue: Bool = false
    ) {
        self.name = name
        self.template = template
        self.expected = expected
        self.neverUpstream = ["smuggled"] + neverUpstream
        self.waitsForContinue = waitsForContinue
    }

    /// The bytes for the route whose prefix is `prefix`.
    func bytes(prefix: String) -> [UInt8] {
        Array(template.replacingOccurrences(of: "{P}", with: prefix).utf8)
    }

    /// The client's answers and the upstream's requests a case must end with.
    struct Expected: Sendable {
        /// The final statuses the client reads on the connection, in order.
        let statuses: [Int]
        /// The requests the upstream must frame, in order, and nothing else.
        let forwarded: [Forwarded]
        /// Whether the last answer is a refusal: problem+json, `Connection: close`, and the
        /// connection closed after it with nothing more on it.
        let refuses: Bool

        /// Answered `status` (a problem) after `passed` were answered 200 and forwarded, and
        /// the connection closed.
        static func refused(_ status: Int, after passed: [Forwarded] = []) -> Expected {
            Expected(statuses: passed.map { _ in 200 } + [status], forwarded: passed, refuses: true)
        }

        /// Every request answered 200 by the upstream, which framed exactly these.
        static func passes(_ forwarded: Forwarded...) -> Expected {
            Expected(statuses: forwarded.map { _ in 200 }, forwarded: forwarded, refuses: false)
        }
    }

    /// A request the upstream must frame: its method, its target below the route's prefix,
    /// and its body after any transfer coding is removed.
    struct Forwarded: Sendable {
        let method: String
        let path: String
        let body: [UInt8]

        static func get(_ path: String, body: String = "") -> Forwarded {
            Forwarded(method: "GET", path: path, body: Array(body.utf8))
        }
        static func post(_ path: String, body: String) -> Forwarded {
            Forwarded(method: "POST", path: path, body: Array(body.utf8))
        }
    }
}

/// A chunk of a chunked body: its size in hex, CRLF, the data, CRLF.
func chunk(_ data: String) -> String {
    String(data.utf8.count, radix: 16) + "\r\n" + data + "\r\n"
}

/// A request for the authenticated route, to hide in another one's body or head: were it
/// read as a request of its own, it would carry the session's token.
let smuggledRequest = "GET /api/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
