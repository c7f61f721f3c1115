/// One request a ``RecordingUpstream`` framed, as it arrived, and the strict framing it was
/// read with: what a careful origin server would take from the same bytes.
///
/// The framing is deliberately unforgiving (RFC 9112): CRLF line ends only, no NUL, no
/// obs-fold, one `Content-Length` of digits or one `Transfer-Encoding: chunked` (never both),
/// chunk lines of hex digits with an optional extension. Anything else is `malformed`, so a
/// proxy that lets an ambiguous message through shows up as bytes this server refused, or as
/// a request it read that the proxy never meant to send.
public struct RecordedRequest: Sendable {
    /// The request method.
    public var method: String
    /// The request target as sent.
    public var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// The header fields in order, values without surrounding white space.
    public var headers: [(name: String, value: String)]
    /// The body, de-chunked when it was chunked.
    public var body: [UInt8]
    /// The request's bytes as they arrived, head and body.
    public var raw: [UInt8]
    /// The upstream connection it arrived on (0, 1, … in the order they were accepted).
    public var connection: Int
    /// Its place among every request the server framed, on any connection.
    public var arrival: Int

    /// The first value of the field `name` (compared case-insensitively).
    public func header(_ name: String) -> String? { values(of: name).first }

    /// Every value of the field `name` (compared case-insensitively), in order.
    public func values(of name: String) -> [String] {
        let lower = name.lowercased()
        return headers.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    /// What framing found at the start of some bytes.
    public enum Framing: Sendable {
        /// A whole request, and how many bytes it took.
        case request(RecordedRequest, consumed: Int)
        /// A request has begun (or nothing has) and needs more bytes.
        case needMore
        /// The bytes are not a request a strict server would read; why.
        case malformed(String)
    }

    /// Frames the request at the start of `bytes` (its `connection` and `arrival` are left 0).
    public static func frame(_ bytes: ArraySlice<UInt8>) -> Framing {
        let b = Array(bytes)
        guard let headEnd = find([13, 10, 13, 10], in: b, from: 0) else {
            // Nothing a strict server accepts can hide before the end of a head: say so as
            // soon as it is visible, rather than waiting for bytes that may never come.
            return headProblem(b[...]).map(Framing.malformed) ?? .needMore
        }
        if let problem = headProblem(b[..<(headEnd + 2)]) { return .malformed(problem) }
        // Each line with its CRLF (the head was checked: every LF follows a CR), then
        // without it.
        let lines = b[..<(headEnd + 2)].split(separator: 10).map { line in String(decoding: line.dropLast(), as: UTF8.self) }
        let requestLine = lines[0].split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, !requestLine[1].isEmpty,
            requestLine[2] == "HTTP/1.1" || requestLine[2] == "HTTP/1.0"
        else { return .malformed("request line: \(lines[0])") }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].utf8.allSatisfy(isTokenByte), colon != line.startIndex
            else { return .malformed("header line: \(line)") }
            let value = line[line.index(after: colon)...].trimmingSpaceAndTab()
            guard value.utf8.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else {
                return .malformed("header value: \(line)")
            }
            headers.append((String(line[..<colon]), value))
        }
        var request = RecordedRequest(
            method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]), headers: headers,
            body: [], raw: [], connection: 0, arrival: 0)
        let codings = request.values(of: "transfer-encoding")
        let lengths = request.values(of: "content-length")
        let bodyStart = headEnd + 4
        let end: Int
        switch (codings.isEmpty, lengths.isEmpty) {
        case (false, false):
            return .malformed("both Transfer-Encoding and Content-Length")
        case (false, true):
            guard codings == ["chunked"] || codings.map({ $0.lowercased() }) == ["chunked"] else {
                return .malformed("Transfer-Encoding other than one chunked")
            }
            switch dechunk(b, from: bodyStart) {
            case .needMore: return .needMore
            case .malformed(let why): return .malformed(why)
            case .body(let body, let next):
                request.body = body
                end = next
            }
        case (true, false):
            guard lengths.count == 1, let n = Int(lengths[0]), lengths[0].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                lengths[0].utf8.count <= 18
            else { return .malformed("Content-Length is not one decimal number") }
            guard b.count - bodyStart >= n else { return .needMore }
            request.body = Array(b[bodyStart..<(bodyStart + n)])
            end = bodyStart + n
        case (true, true):
            end = bodyStart
        }
        request.raw = Array(b[..<end])
        return .request(request, consumed: end)
    }

    /// Why the head bytes `head` could not start a strict request: a NUL, a CR not before
    /// LF, an LF not after CR, a header line starting with white space.
    private static func headProblem(_ head: ArraySlice<UInt8>) -> String? {
        var previous: UInt8 = 10
        for (i, byte) in zip(head.indices, head) {
            if byte == 0 { return "NUL in the head" }
            if previous == 13 && byte != 10 { return "bare CR in the head" }
            if byte == 10 && previous != 13 { return "bare LF in the head" }
            if (byte == 32 || byte == 9) && previous == 10 {
                return i == head.startIndex ? "white space before the request line" : "obs-fold"
            }
            previous = byte
        }
        return nil
    }

    private enum Dechunked {
        case body([UInt8], next: Int)
        case needMore
        case malformed(String)
    }

    /// Reads a chunked body from `start`: size lines of hex digits (an extension after `;`
    /// allowed, no CR or LF in it), CRLF after each chunk's data, trailer lines, an empty line.
    private static func dechunk(_ b: [UInt8], from start: Int) -> Dechunked {
        var pos = start
        var body: [UInt8] = []
        while true {
            guard let lineEnd = find([13, 10], in: b, from: pos) else { return .needMore }
            let line = b[pos..<lineEnd]
            let sizeDigits = line.prefix { hexValue($0) != nil }
            let rest = line.dropFirst(sizeDigits.count)
            guard !sizeDigits.isEmpty, sizeDigits.count <= 15, rest.isEmpty || rest.first == 59,
                !rest.contains(13), !rest.contains(10), !rest.contains(0)
            else { return .malformed("chunk size line") }
            let size = sizeDigits.reduce(0) { $0 * 16 + Int(hexValue($1)!) }
            pos = lineEnd + 2
            if size == 0 { break }
            guard b.count - pos >= size + 2 else { return .needMore }
            body += b[pos..<(pos + size)]
            guard b[pos + size] == 13, b[pos + size + 1] == 10 else { return .malformed("chunk data not followed by CRLF") }
            pos += size + 2
        }
        // Trailer fields, then the empty line.
        while true {
            guard let lineEnd = find([13, 10], in: b, from: pos) else { return .needMore }
            if b[pos..<lineEnd].contains(10) || b[pos..<lineEnd].contains(13) { return .malformed("trailer line") }
            let empty = lineEnd == pos
            pos = lineEnd + 2
            if empty { return .body(body, next: pos) }
        }
    }

    private static func find(_ needle: [UInt8], in b: [UInt8], from: Int) -> Int? {
        guard from <= b.count else { return nil }
        return b[from...].firstRange(of: needle)?.lowerBound
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: b - 48
        case 65...70: b - 55
        case 97...102: b - 87
        default: nil
        }
    }

    /// Whether `byte` is an RFC 9110 `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}

extension Substring {
    /// Without leading and trailing SP and HTAB.
    fileprivate func trimmingSpaceAndTab() -> String {
        let u = utf8
        let start = u.firstIndex { $0 != 32 && $0 != 9 } ?? u.endIndex
        let end = u[start...].lastIndex { $0 != 32 && $0 != 9 }.map { u.index(after: $0) } ?? start
        return String(self[start..<end])
    }
}
