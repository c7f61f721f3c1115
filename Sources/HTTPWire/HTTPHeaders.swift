/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and duplicates are kept as received, because framing rules need to see
/// every `Content-Length` and `Transfer-Encoding` line.
///
/// The fields are kept as the head lines they are sent as: `name: value` and CRLF, one after
/// the other in one buffer, and an entry per field saying where its name and value lie. A
/// parsed head is two allocations whatever its fields (a line that arrived in that form is
/// one copy), removing a field touches only the entries, and serialising copies each run of
/// lines still next to each other in one piece. A `String` is made only when one is asked for.
/// Each entry also remembers whether its name is a token and its value free of control
/// characters, checked once when the field is added, so that a head is not checked again
/// each time it is sent (``firstInvalidField``).
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// Where one field lies in ``storage``: its line from `start` to `end` + 2, the name from
    /// `start` to `nameEnd`, then `": "`, the value from `nameEnd` + 2 to `end`, then CRLF.
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var start: UInt32
        @usableFromInline var nameEnd: UInt32
        @usableFromInline var end: UInt32
        /// Whether the name is a token.
        @usableFromInline var validName: Bool
        /// Whether the value holds no control character but HTAB.
        @usableFromInline var validValue: Bool

        @usableFromInline var nameCount: Int { Int(nameEnd &- start) }
        @usableFromInline var valueStart: Int { Int(nameEnd) &+ 2 }
        @usableFromInline var lineEnd: Int { Int(end) &+ 2 }
    }

    /// The fields' lines, one after the other. Lines of removed fields stay until the next
    /// copy; a head lives for one message.
    @usableFromInline var storage: [UInt8] = []
    /// The fields in wire order.
    @usableFromInline var entries: [Entry] = []
    /// Bit `n % 64` is set when a field whose name is `n` bytes long was added: a lookup of a
    /// name of a length never added (most lookups: `Transfer-Encoding`, `Expect`, a
    /// `Connection` most requests do not send) ends here, without reading an entry. Bits of
    /// removed fields stay set, which only costs such a lookup its scan.
    private var nameLengths: UInt64 = 0

    private static func lengthBit(_ count: Int) -> UInt64 { 1 &<< UInt64(count & 63) }

    /// Creates a header list.
    public init(_ fields: [(name: String, value: String)] = []) {
        if fields.isEmpty { return }
        entries.reserveCapacity(fields.count)
        for field in fields { add(name: field.name, value: field.value) }
    }

    /// The fields in wire order, each made into a pair of strings.
    public var fields: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        out.reserveCapacity(entries.count)
        for i in entries.indices { out.append(field(at: i)) }
        return out
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.entries.count == rhs.entries.count else { return false }
        return lhs.storage.withUnsafeBufferPointer { l in
            rhs.storage.withUnsafeBufferPointer { r in
                zip(lhs.entries, rhs.entries).allSatisfy { a, b in
                    a.nameEnd &- a.start == b.nameEnd &- b.start
                        && l[Int(a.start)..<a.lineEnd].elementsEqual(r[Int(b.start)..<b.lineEnd])
                }
            }
        }
    }

    /// Empties the list and keeps its room (a list still shared gets room of its own).
    mutating func removeAllKeepingCapacity() {
        storage.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        nameLengths = 0
    }

    /// The room of the lines' buffer, in bytes.
    var storageCapacity: Int { storage.capacity }

    /// Makes room for `n` fields of `bytes` bytes in all.
    public mutating func reserveCapacity(_ n: Int, bytes: Int = 0) {
        entries.reserveCapacity(n)
        storage.reserveCapacity(Swift.max(bytes, n * 32))
    }

    /// Appends a field.
    public mutating func add(name: String, value: String) {
        var name = name
        var value = value
        name.withUTF8 { n in
            value.withUTF8 { v in
                append(
                    name: n, value: v, validName: FramingRules.isValidFieldName(n), validValue: FramingRules.isValidFieldValue(v))
            }
        }
    }

    /// Appends a field whose name and value are given as bytes and checked here.
    public mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        append(
            name: name, value: value, validName: FramingRules.isValidFieldName(name),
            validValue: FramingRules.isValidFieldValue(value))
    }

    /// Appends a field named by a literal, its value given as bytes and checked here. The
    /// name is the program's own: it is checked in debug builds (and so by the tests) only.
    public mutating func add(name: StaticString, value: UnsafeBufferPointer<UInt8>) {
        name.withUTF8Buffer { n in
            assert(FramingRules.isValidFieldName(n), "a literal field name that is not a token")
            append(name: n, value: value, validName: true, validValue: FramingRules.isValidFieldValue(value))
        }
    }

    /// Appends a field named by a literal whose value the caller has already found to be
    /// visible ASCII (`valueChecked`, e.g. a token checked when it was issued), so it is not
    /// scanned again; with `valueChecked` false it is checked here, the way every other
    /// added value is. Debug builds check it either way.
    public mutating func add(name: StaticString, value: UnsafeBufferPointer<UInt8>, valueChecked: Bool) {
        guard valueChecked else { return add(name: name, value: value) }
        name.withUTF8Buffer { n in
            assert(FramingRules.isValidFieldName(n), "a literal field name that is not a token")
            assert(FramingRules.isValidFieldValue(value), "a value said to be checked has a control character")
            append(name: n, value: value, validName: true, validValue: true)
        }
    }

    /// Appends a field a parser has already checked.
    mutating func appendChecked(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        append(name: name, value: value, validName: true, validValue: true)
    }

    private mutating func append(
        name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, validName: Bool, validValue: Bool
    ) {
        let start = storage.count
        precondition(start + name.count + value.count + 4 < Int(UInt32.max), "a header list over 4 GiB")
        storage.append(contentsOf: name)
        storage.append(0x3A)
        storage.append(0x20)
        storage.append(contentsOf: value)
        storage.append(0x0D)
        storage.append(0x0A)
        nameLengths |= Self.lengthBit(name.count)
        entries.append(
            Entry(
                start: UInt32(start), nameEnd: UInt32(start + name.count), end: UInt32(storage.count - 2), validName: validName,
                validValue: validValue))
    }

    /// Appends a field a parser has already checked, given as the whole line it arrived as:
    /// `name: value` and CRLF, `nameCount` bytes of name.
    mutating func appendCheckedLine(_ line: UnsafeBufferPointer<UInt8>, nameCount: Int) {
        let start = storage.count
        precondition(start + line.count < Int(UInt32.max), "a header list over 4 GiB")
        storage.append(contentsOf: line)
        nameLengths |= Self.lengthBit(nameCount)
        entries.append(
            Entry(
                start: UInt32(start), nameEnd: UInt32(start + nameCount), end: UInt32(storage.count - 2), validName: true,
                validValue: true))
    }

    /// Appends every field of `other`, in order (the lines next to each other in one piece).
    public mutating func add(contentsOf other: HTTPHeaders) {
        add(contentsOf: other) { _ in true }
    }

    /// Appends the fields of `other` that `keep` picks (given each name's bytes as sent), in
    /// order. Kept lines that are next to each other in `other` are copied in one piece.
    public mutating func add(contentsOf other: HTTPHeaders, where keep: (UnsafeBufferPointer<UInt8>) -> Bool) {
        other.storage.withUnsafeBufferPointer { s in
            // The run of kept lines not yet copied: `runStart..<runEnd` in `s`, going to `runBase`.
            var runStart = -1
            var runEnd = -1
            var runBase = 0
            for e in other.entries {
                guard keep(UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)])) else { continue }
                if Int(e.start) != runEnd {
                    if runStart >= 0 { storage.append(contentsOf: UnsafeBufferPointer(rebasing: s[runStart..<runEnd])) }
                    runStart = Int(e.start)
                    runBase = storage.count
                }
                runEnd = e.lineEnd
                nameLengths |= Self.lengthBit(e.nameCount)
                let shift = UInt32(runBase + (Int(e.start) - runStart)) &- e.start
                entries.append(
                    Entry(
                        start: e.start &+ shift, nameEnd: e.nameEnd &+ shift, end: e.end &+ shift, validName: e.validName,
                        validValue: e.validValue))
            }
            if runStart >= 0 { storage.append(contentsOf: UnsafeBufferPointer(rebasing: s[runStart..<runEnd])) }
        }
    }

    /// Replaces every field called `name` with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        // Most calls find nothing to remove: then the entries are not even copied.
        guard contains(name) else { return }
        var name = name
        name.withUTF8 { n in removeAll { Self.equalsIgnoringCase($0, n) } }
    }

    /// Removes every field whose name `shouldRemove` picks (given the name's bytes as sent).
    public mutating func removeAll(where shouldRemove: (UnsafeBufferPointer<UInt8>) -> Bool) {
        let bytes = storage
        bytes.withUnsafeBufferPointer { s in
            func name(_ e: Entry) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)])
            }
            // Most calls remove nothing: then the entries are not even copied.
            guard let first = entries.firstIndex(where: { shouldRemove(name($0)) }) else { return }
            var kept = first
            for i in (first + 1)..<entries.count where !shouldRemove(name(entries[i])) {
                entries[kept] = entries[i]
                kept += 1
            }
            entries.removeLast(entries.count - kept)
        }
    }

    /// The first value of `name`, if any.
    public subscript(first name: String) -> String? {
        var found: String?
        forEach(named: name) { value in
            if found == nil { found = String(decoding: value, as: UTF8.self) }
        }
        return found
    }

    /// Every value of `name`, in order.
    public subscript(all name: String) -> [String] {
        var out: [String] = []
        forEach(named: name) { out.append(String(decoding: $0, as: UTF8.self)) }
        return out
    }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        var n = 0
        forEach(named: name) { _ in n += 1 }
        return n
    }

    /// Whether a field called `name` is present.
    public func contains(_ name: String) -> Bool {
        let length = name.utf8.count
        guard nameLengths & Self.lengthBit(length) != 0 else { return false }
        var name = name
        return name.withUTF8 { n in
            storage.withUnsafeBufferPointer { s in
                entries.contains { e in
                    e.nameCount == length
                        && Self.equalsIgnoringCase(UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)]), n)
                }
            }
        }
    }

    /// Number of fields.
    public var count: Int { entries.count }

    /// The bytes the fields' names and values take, removed fields' included.
    public var byteCount: Int { storage.count }

    /// Calls `body` with the bytes of each value of the fields called `name`, in order.
    public func forEach(named name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        let length = name.utf8.count
        // Names are compared by length first: most differ in it, and then no bytes are read.
        guard nameLengths & Self.lengthBit(length) != 0 else { return }
        var name = name
        name.withUTF8 { n in
            storage.withUnsafeBufferPointer { s in
                for e in entries
                where e.nameCount == length
                    && Self.equalsIgnoringCase(UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)]), n)
                {
                    body(UnsafeBufferPointer(rebasing: s[e.valueStart..<Int(e.end)]))
                }
            }
        }
    }

    /// ``forEach(named:_:)`` for a name known when compiling: no string is looked into.
    public func forEach(named name: StaticString, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        let length = name.utf8CodeUnitCount
        guard nameLengths & Self.lengthBit(length) != 0 else { return }
        name.withUTF8Buffer { n in
            storage.withUnsafeBufferPointer { s in
                for e in entries
                where e.nameCount == length
                    && Self.equalsIgnoringCase(UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)]), n)
                {
                    body(UnsafeBufferPointer(rebasing: s[e.valueStart..<Int(e.end)]))
                }
            }
        }
    }

    /// Calls `body` with the name and value bytes of each field, in order.
    public func forEachField(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Void) {
        storage.withUnsafeBufferPointer { s in
            for e in entries {
                body(
                    UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)]),
                    UnsafeBufferPointer(rebasing: s[e.valueStart..<Int(e.end)]))
            }
        }
    }

    /// The first field that cannot be sent as it is, if any: its name, and whether the name
    /// (rather than the value) is what is wrong.
    public var firstInvalidField: (name: String, nameIsInvalid: Bool)? {
        guard let i = entries.firstIndex(where: { !$0.validName || !$0.validValue }) else { return nil }
        return (field(at: i).name, !entries[i].validName)
    }

    /// Appends each field as a head line, `name: value` and CRLF, bytes as they are
    /// (callers check fields they did not make themselves, ``firstInvalidField``). Lines
    /// still next to each other are copied in one piece.
    public func serialize(into out: inout [UInt8]) {
        serialize(into: &out) { _ in false }
    }

    /// ``serialize(into:)`` without the fields whose name `omit` picks.
    public func serialize(into out: inout [UInt8], omitting omit: (UnsafeBufferPointer<UInt8>) -> Bool) {
        storage.withUnsafeBufferPointer { s in
            var run = 0..<0
            for e in entries {
                if omit(UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)])) { continue }
                if run.upperBound == Int(e.start) && !run.isEmpty {
                    run = run.lowerBound..<e.lineEnd
                } else {
                    if !run.isEmpty { out.append(contentsOf: UnsafeBufferPointer(rebasing: s[run])) }
                    run = Int(e.start)..<e.lineEnd
                }
            }
            if !run.isEmpty { out.append(contentsOf: UnsafeBufferPointer(rebasing: s[run])) }
        }
    }

    /// The field at `index` as strings.
    private func field(at index: Int) -> (name: String, value: String) {
        let e = entries[index]
        return storage.withUnsafeBufferPointer { s in
            (
                String(decoding: UnsafeBufferPointer(rebasing: s[Int(e.start)..<Int(e.nameEnd)]), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(rebasing: s[e.valueStart..<Int(e.end)]), as: UTF8.self)
            )
        }
    }

    /// Whether `a` and `b` spell the same name, compared without ASCII case.
    @inlinable
    public static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a[i] != b[i] {
            let lower = a[i] | 0x20
            guard lower == b[i] | 0x20, lower >= 0x61, lower <= 0x7A else { return false }
        }
        return true
    }

    /// Whether `a` spells the name `b`, compared without ASCII case.
    @inlinable
    public static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: StaticString) -> Bool {
        b.withUTF8Buffer { equalsIgnoringCase(a, $0) }
    }

    public func makeIterator() -> Iterator {
        Iterator(headers: self)
    }

    /// The fields in wire order, each made into a pair of strings as it is reached.
    public struct Iterator: IteratorProtocol {
        let headers: HTTPHeaders
        var index = 0

        public mutating func next() -> (name: String, value: String)? {
            guard index < headers.entries.count else { return nil }
            defer { index += 1 }
            return headers.field(at: index)
        }
    }
}

extension String {
    /// ASCII case-insensitive comparison, as header names need.
    @inlinable
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        // Lengths first: O(1) for native strings, and most names differ in length.
        if utf8.count != other.utf8.count { return false }
        var a = self
        var b = other
        // Contiguous UTF-8 (no copy for native strings): a byte loop, no iterators.
        return a.withUTF8 { x in b.withUTF8 { y in HTTPHeaders.equalsIgnoringCase(x, y) } }
    }

    /// The string lowercased in ASCII only.
    public var asciiLowercased: String {
        String(decoding: utf8.map { ($0 >= 65 && $0 <= 90) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
