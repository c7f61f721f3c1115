/// The header fields of one message head as http-parser reports them: each name and each
/// value in one piece or several (when the head arrives in several reads), then the next name
/// or the end of the head finishing the field. Shared by ``RequestParser`` and
/// ``ResponseParser``; which refusals fail a message is theirs to say.
///
/// A piece is borrowed from the input being parsed, not copied: a field that is finished
/// within that input is copied once, into the head's ``HTTPHeaders``. Whatever is unfinished when the input
/// ends is copied by ``detach()``, which the parser calls after every `http_parser_execute`,
/// before the input can go away.
struct HeaderFieldAccumulator {
    /// Why a finished field was not kept.
    enum Refusal: Error, Equatable {
        /// The name is not an RFC 9110 token.
        case invalidName
        /// The value holds a control character (other than HTAB) or DEL.
        case invalidValue
        /// The head already has the most fields allowed.
        case tooMany
    }

    /// The fields finished so far, in order, values without trailing white space.
    private(set) var headers = HTTPHeaders()

    /// The fields finished so far, as strings.
    var fields: [(name: String, value: String)] { headers.fields }
    private var name = Piece()
    private var value = Piece()
    /// Whether the current field's value has begun (the next name finishes the field).
    private(set) var inValue = false
    /// Whether a field has begun and is not finished.
    var hasUnfinishedField: Bool { inValue || !name.isEmpty }

    /// The bytes of the unfinished field.
    var unfinishedBytes: Int { name.count + value.count }

    /// The fields finished so far, moved out: the accumulator holds none afterwards, so the
    /// taker's copy is the only one, and a proxy's edits to it (hop-by-hop fields removed,
    /// `Via` added) happen in place instead of copying every field first.
    mutating func takeHeaders() -> HTTPHeaders {
        let taken = headers
        headers = HTTPHeaders()
        return taken
    }

    /// Forgets everything, for the next message.
    mutating func reset() {
        // A list of its own each message: the last one's went out with its head. A spare
        // of this thread's when there is one (a head already sent), else with room for a
        // typical head's fields, so that it is allocated once.
        headers = HTTPHeaders.pooled(fields: 16, bytes: 512)
        name.clear()
        value.clear()
        inValue = false
    }

    /// Adds a piece of the current field's name. The caller finishes the field first when
    /// ``inValue`` (a name after a value starts the next field).
    mutating func appendName(_ at: UnsafePointer<CChar>?, _ count: Int) {
        name.append(at, count)
    }

    /// Adds a piece of the current field's value.
    mutating func appendValue(_ at: UnsafePointer<CChar>?, _ count: Int) {
        inValue = true
        value.append(at, count)
    }

    /// Finishes the current field: keeps it when its name and value are valid and there is
    /// room for it (fewer than `maxCount` fields), else says why not. Either way the next
    /// field starts empty.
    mutating func finishField(maxCount: Int) -> Refusal? {
        defer {
            name.clear()
            value.clear()
            inValue = false
        }
        let room = headers.count < maxCount
        let inOneRead = name.isBorrowed && value.isBorrowed
        return name.withBytes { n in
            value.withBytes { v in
                guard FramingRules.isValidFieldName(n) else { return .invalidName }
                guard FramingRules.isValidFieldValue(v) else { return .invalidValue }
                guard room else { return .tooMany }
                if inOneRead, let line = Self.line(name: n, value: v) {
                    headers.appendCheckedLine(line, nameCount: n.count)
                    return nil
                }
                var end = v.count
                while end > 0 && (v[end - 1] == 0x20 || v[end - 1] == 0x09) { end -= 1 }
                headers.appendChecked(name: n, value: UnsafeBufferPointer(rebasing: v[..<end]))
                return nil
            }
        }
    }

    /// The field's whole line in the input, when it is `name: value` and CRLF exactly (no
    /// other white space): then it is kept as it came, in one copy.
    ///
    /// Only for a name and a value borrowed from the input of the parse under way: a field
    /// is finished by what follows its line (the next name, or the end of the head), so the
    /// two bytes after the value are in that input too.
    private static func line(name n: UnsafeBufferPointer<UInt8>, value v: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<
        UInt8
    >? {
        guard let nb = n.baseAddress, let vb = v.baseAddress, nb + n.count + 2 == vb, nb[n.count] == 0x3A,
            nb[n.count + 1] == 0x20,
            vb[v.count] == 0x0D, vb[v.count + 1] == 0x0A, v[v.count - 1] != 0x20, v[v.count - 1] != 0x09
        else { return nil }
        return UnsafeBufferPointer(start: nb, count: n.count + v.count + 4)
    }

    /// Copies what is borrowed from the input; call before the input goes away.
    mutating func detach() {
        name.detach()
        value.detach()
    }

    /// Whether the unfinished field's name is `lowercased`, compared without case.
    func unfinishedNameIs(_ lowercased: StaticString) -> Bool {
        // By length first: most names differ in it, and then no byte is read.
        name.count == lowercased.utf8CodeUnitCount && name.withBytes { HTTPHeaders.equalsIgnoringCase($0, lowercased) }
    }

    /// A name or a value: borrowed from the input while it is one contiguous run of it,
    /// owned once it is not (or once the input is about to go away).
    private struct Piece {
        private var owned: [UInt8] = []
        /// Invariant: points into the input of the `http_parser_execute` call under way;
        /// ``detach()`` runs before that call's input goes away.
        private var borrowed: UnsafeBufferPointer<UInt8>?

        var count: Int { owned.count + (borrowed?.count ?? 0) }
        /// Whether the piece is all borrowed from the input (and not empty).
        var isBorrowed: Bool { borrowed != nil && owned.isEmpty }
        var isEmpty: Bool { count == 0 }

        mutating func append(_ at: UnsafePointer<CChar>?, _ n: Int) {
            guard let at, n > 0 else { return }
            let start = UnsafeRawPointer(at).assumingMemoryBound(to: UInt8.self)
            if let b = borrowed, let base = b.baseAddress, owned.isEmpty, base + b.count == start {
                borrowed = UnsafeBufferPointer(start: base, count: b.count + n)
            } else if borrowed == nil && owned.isEmpty {
                borrowed = UnsafeBufferPointer(start: start, count: n)
            } else {
                detach()
                owned.append(contentsOf: UnsafeBufferPointer(start: start, count: n))
            }
        }

        mutating func detach() {
            guard let b = borrowed else { return }
            owned.append(contentsOf: b)
            borrowed = nil
        }

        mutating func clear() {
            borrowed = nil
            if !owned.isEmpty { owned.removeAll(keepingCapacity: true) }
        }

        func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
            if let borrowed { return body(borrowed) }
            return owned.withUnsafeBufferPointer(body)
        }
    }
}
