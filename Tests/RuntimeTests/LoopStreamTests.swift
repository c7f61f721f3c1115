import CLibUV
import Glibc
import Testing

@testable import Runtime

/// ``LoopStream`` (through ``LoopTCP`` and ``StreamListener/accept(readBuffer:)``) over a
/// real loopback connection: what the kernel does not take at once is queued and arrives
/// whole and in order, the shutdown reaches the peer as the end of its input, and a closed
/// stream refuses every call without touching its freed handle.
@Suite struct LoopStreamTests {
    /// What one connected pair saw.
    struct Transfer: Sendable {
        var queued = 0
        var sentAtOnce = 0
        var completions: [Int32] = []
        var received = 0
        var inOrder = true
        var endOfInput: Int?
        var shutdownStatus: Int32?
        var acceptedIsTCP = false
        var error: String?
    }

    /// Bytes written, in 256 KiB chunks: more than loopback's socket buffers take while the
    /// peer does not read (a send buffer of at most 4 MiB here, `tcp_wmem`), so some must wait
    /// in the write queue. 12 MiB keeps the sanitizer builds quick: their shadow memory made
    /// 32 MiB take two minutes of system time there, starving the tests that ran beside it.
    static let total = 12 * 1024 * 1024
    static let chunk = 256 * 1024
    /// The byte at offset `o` is `o % 251`; this holds every run a read or a chunk can need.
    static let pattern = (0..<(251 + 256 * 1024)).map { UInt8($0 % 251) }

    @Test func bytesTheKernelCannotTakeAtOnceAreQueuedAndArriveWholeAndInOrder() async throws {
        let loop = try EventLoop(name: "stream-test")
        loop.start()
        defer { loop.shutdown() }
        let t = await withCheckedContinuation { (cont: CheckedContinuation<Transfer, Never>) in
            loop.execute { LoopStreamTests.transfer(on: loop) { cont.resume(returning: $0) } }
        }
        #expect(t.error == nil)
        #expect(t.acceptedIsTCP)
        #expect(t.sentAtOnce > 0, "no write left at once: the test proves nothing about uv_try_write")
        #expect(t.queued > 0, "every write left at once: the test proves nothing about the queue")
        #expect(t.completions.count == t.queued)
        #expect(t.completions.allSatisfy { $0 == 0 })
        #expect(t.received == LoopStreamTests.total)
        #expect(t.inOrder)
        #expect(t.endOfInput == Int(UV_EOF.rawValue))
        #expect(t.shutdownStatus == 0)
    }

    /// Connects a ``LoopTCP`` to a listener on the same loop, writes ``total`` bytes before
    /// the accepted side reads any, shuts down, then reads everything on the accepted side.
    static func transfer(on loop: EventLoop, done: @escaping (Transfer) -> Void) {
        var t = Transfer()
        var listener: StreamListener?
        var server: LoopStream?
        let client: LoopTCP
        do throws(RuntimeError) {
            client = try LoopTCP(loop: loop.uv, readBuffer: loop.readBuffer)
        } catch {
            t.error = "\(error)"
            done(t)
            return
        }
        func finish() {
            guard t.endOfInput != nil, t.shutdownStatus != nil || t.error != nil else { return }
            server?.close()
            client.close()
            listener?.close()
            done(t)
        }
        func fail(_ why: String) {
            t.error = why
            t.endOfInput = t.endOfInput ?? -1
            finish()
        }
        var connected = false
        /// Once both sides are up: writes everything, shuts down, then lets the peer read.
        func go() throws(RuntimeError) {
            guard connected, let server else { return }
            sendAll(client, &t)
            try client.shutdown()
            try server.startReading()
        }
        client.onWriteCompleted = { status in t.completions.append(status) }
        client.onShutdownCompleted = { status in
            t.shutdownStatus = status
            finish()
        }
        do throws(RuntimeError) {
            let l = try StreamListener.tcp(loop: loop.uv, host: "127.0.0.1", port: 0, backlog: 8) { _ in
                do throws(RuntimeError) {
                    let accepted = try listener!.accept(readBuffer: loop.readBuffer)
                    server = accepted
                    t.acceptedIsTCP = accepted is LoopTCP
                    accepted.onRead = { result, bytes in
                        guard result > 0 else {
                            t.endOfInput = result
                            finish()
                            return
                        }
                        let expected = LoopStreamTests.pattern.withUnsafeBytes { p in
                            memcmp(bytes.baseAddress!, p.baseAddress! + t.received % 251, min(bytes.count, 256 * 1024))
                        }
                        if expected != 0 || bytes.count > 256 * 1024 { t.inOrder = false }
                        t.received += bytes.count
                    }
                    try go()
                } catch {
                    fail("\(error)")
                }
            }
            listener = l
            var address = sockaddr_storage()
            try SocketAddress.make(host: "127.0.0.1", port: try l.boundPort(), into: &address)
            try withUnsafePointer(to: &address) { p throws(RuntimeError) in
                try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(RuntimeError) in
                    try client.connect(to: sa) { status in
                        guard status == 0 else { return fail("connect: \(status)") }
                        connected = true
                        do throws(RuntimeError) { try go() } catch { fail("\(error)") }
                    }
                }
            }
        } catch {
            fail("\(error)")
        }
    }

    /// Writes ``total`` bytes (byte `i` is `i % 251`), counting the writes that were queued.
    static func sendAll(_ client: LoopTCP, _ t: inout Transfer) {
        var block = [UInt8](repeating: 0, count: chunk)
        var offset = 0
        while offset < total {
            block.replaceSubrange(0..<chunk, with: pattern[(offset % 251)..<(offset % 251 + chunk)])
            do throws(RuntimeError) {
                if try write(client, block) { t.sentAtOnce += 1 } else { t.queued += 1 }
            } catch {
                t.error = "\(error)"
                return
            }
            offset += chunk
        }
    }

    /// ``LoopStream/write(_:)`` of an array (`withUnsafeBytes` throws untyped errors).
    static func write(_ stream: LoopStream, _ bytes: [UInt8]) throws(RuntimeError) -> Bool {
        var failure: RuntimeError?
        let sent = bytes.withUnsafeBytes { raw in
            do throws(RuntimeError) {
                return try stream.write(raw)
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return sent
    }

    /// Whether `error` is the `EINVAL` a closed stream answers, and its operation.
    static func refusal(_ error: RuntimeError?) -> String {
        "\(error?.systemCode == -EINVAL) \(error?.operation ?? "none")"
    }

    @Test func aClosedStreamRefusesEveryCallWithoutTouchingItsHandle() async throws {
        let loop = try EventLoop(name: "stream-closed")
        loop.start()
        defer { loop.shutdown() }
        let errors = await withCheckedContinuation { (cont: CheckedContinuation<[String], Never>) in
            loop.execute {
                do throws(RuntimeError) {
                    let tcp = try LoopTCP(loop: loop.uv, readBuffer: loop.readBuffer)
                    let pipe = try LoopStream(pipe: loop.uv, readBuffer: loop.readBuffer)
                    pipe.close()
                    tcp.close {
                        // Both handles' memory is freed by now: the wrapper must refuse
                        // without reaching libuv.
                        var seen: [String] = []
                        let refusal = LoopStreamTests.refusal
                        let write = LoopStreamTests.write
                        for stream in [tcp, pipe] as [LoopStream] {
                            let one: [UInt8] = [1]
                            seen.append(refusal(LoopHandleTests.failure { () throws(RuntimeError) in try stream.startReading() }))
                            seen.append(
                                refusal(LoopHandleTests.failure { () throws(RuntimeError) in _ = try write(stream, one) }))
                            seen.append(refusal(LoopHandleTests.failure { () throws(RuntimeError) in try stream.shutdown() }))
                            stream.stopReading()
                            seen.append("queued \(stream.queuedBytes)")
                        }
                        seen.append("peer \(tcp.peerName() ?? "none")")
                        cont.resume(returning: seen)
                    }
                } catch {
                    cont.resume(returning: ["\(error)"])
                }
            }
        }
        let each = ["true uv_read_start", "true uv_write", "true uv_shutdown", "queued 0"]
        #expect(errors == each + each + ["peer none"])
    }
}
