// libFuzzer entry point for the HTTP request parser wrapper.
//
// Built together with Sources/HTTPWire by scripts/fuzz. For every input it checks that
// parsing never crashes, that feeding the input whole or split at an arbitrary point
// gives the same heads, bodies and error, and that every error is a 4xx/5xx status.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let split = Int(bytes[0]) % max(1, size)
    let input = Array(bytes.dropFirst())
    let whole = run(input, cut: input.count)
    let parts = run(input, cut: min(split, input.count))
    if whole != parts {
        fatalError("split at \(split) changed the result: \(whole) vs \(parts)")
    }
    if let status = whole.errorStatus, !(400..<600).contains(status) {
        fatalError("error status \(status) out of range")
    }
    return 0
}

struct Outcome: Equatable, CustomStringConvertible {
    var targets: [String] = []
    var bodies: [[UInt8]] = []
    var errorStatus: Int?
    var description: String { "\(targets) \(bodies.map(\.count)) \(String(describing: errorStatus))" }
}

func run(_ input: [UInt8], cut: Int) -> Outcome {
    let parser = RequestParser(limits: HTTPLimits(maxHeadBytes: 2048, maxTargetBytes: 512, maxHeaderCount: 20))
    var out = Outcome()
    for chunk in [input[0..<cut], input[cut...]] {
        let slice = Array(chunk)
        var off = 0
        while off < slice.count {
            let (event, used) = slice.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[off...])) }
            off += used
            switch event {
            case .needMoreData:
                if used == 0 { off = slice.count }
            case .head(let h):
                out.targets.append(h.target)
                out.bodies.append([])
            case .body(let b):
                out.bodies[out.bodies.count - 1] += Array(b)
            case .end:
                break
            case .error(let e):
                out.errorStatus = e.status
                return out
            }
        }
    }
    return out
}
