import CLibUV
import Glibc
import Locking
import TestSupport
import Testing

@testable import Runtime

/// The libuv wrappers, with failures provoked for real: a descriptor that is not open, a
/// file that cannot be polled, a port that is taken, a handle used after close.
@Suite struct LoopHandleTests {
    /// Runs `body` on a fresh loop's thread and returns what it returns.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (EventLoop) -> T) async throws -> T {
        let loop = try EventLoop(name: "handle-test")
        loop.start()
        defer { loop.shutdown() }
        return await withCheckedContinuation { cont in loop.execute { cont.resume(returning: body(loop)) } }
    }

    /// The error `body` throws, or nil.
    static func failure(_ body: () throws(RuntimeError) -> Void) -> RuntimeError? {
        do throws(RuntimeError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func aPollOnADescriptorThatIsNotOpenFailsWithEBADF() async throws {
        let error = try await onLoop { loop in
            LoopHandleTests.failure { () throws(RuntimeError) in _ = try LoopPoll(loop: loop.uv, socket: -1) { _, _ in } }
        }
        #expect(error?.code == .libuvFailed)
        #expect(error?.systemCode == -EBADF)
        #expect(error?.operation == "uv_poll_init_socket")
        #expect(error?.description.contains("EBADF") == true)
    }

    @Test func aPollOnARegularFileFailsWithEPERM() async throws {
        let fd = open("/proc/self/stat", O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let error = try await onLoop { loop in
            LoopHandleTests.failure { () throws(RuntimeError) in _ = try LoopPoll(loop: loop.uv, socket: fd) { _, _ in } }
        }
        #expect(error?.systemCode == -EPERM)
    }

    @Test func aTimerFiresThenRefusesToStartOnceClosed() async throws {
        let loop = try EventLoop(name: "timer-test")
        loop.start()
        defer { loop.shutdown() }
        let (error, closing) = await withCheckedContinuation { (cont: CheckedContinuation<(RuntimeError?, Bool), Never>) in
            loop.execute {
                do throws(RuntimeError) {
                    let timer = try LoopTimer(loop: loop.uv)
                    try timer.start(after: 1) {
                        timer.close {
                            // The handle's memory is freed by now: the wrapper must refuse
                            // without touching it.
                            cont.resume(
                                returning: (
                                    LoopHandleTests.failure { () throws(RuntimeError) in try timer.start(after: 1) },
                                    timer.isClosing
                                ))
                        }
                    }
                } catch {
                    cont.resume(returning: (error, false))
                }
            }
        }
        #expect(closing)
        #expect(error?.code == .libuvFailed)
        #expect(error?.systemCode == -EINVAL)
    }

    @Test func aTCPListenerOnAPortTakenWithoutReusePortFailsWithAddressInUse() async throws {
        // A socket bound without SO_REUSEPORT keeps the port from every other socket.
        let fd = socket(AF_INET, streamSocketType, 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(fd, 1) == 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        let error = try await onLoop { loop in
            LoopHandleTests.failure { () throws(RuntimeError) in
                _ = try StreamListener.tcp(loop: loop.uv, host: "127.0.0.1", port: port, backlog: 8) { _ in }
            }
        }
        #expect(error?.code == .listenFailed)
        #expect(error?.systemCode == -EADDRINUSE)
        // libuv reports a bind's EADDRINUSE from uv_listen, so the operation is either.
        #expect(error?.description.contains("127.0.0.1:\(port) failed: EADDRINUSE") == true, "\(String(describing: error))")
    }

    @Test func aListenerOnTextThatIsNotAnAddressFailsBeforeMakingASocket() async throws {
        let error = try await onLoop { loop in
            LoopHandleTests.failure { () throws(RuntimeError) in
                _ = try StreamListener.tcp(loop: loop.uv, host: "localhost", port: 0, backlog: 8) { _ in }
            }
        }
        #expect(error?.code == .listenFailed)
        #expect(error?.systemCode == -EINVAL)
    }
}
