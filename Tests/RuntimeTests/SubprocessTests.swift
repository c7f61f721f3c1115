import Foundation
import Glibc
import TestSupport
import Testing

/// The tests' process spawner (``Subprocess``): what a child inherits, and how its end reads.
@Suite struct SubprocessTests {
    @Test func aChildInheritsItsThreeStreamsAndNoOtherDescriptor() throws {
        // A descriptor this process leaves open across exec, as a careless caller would.
        let leaky = open("/dev/null", O_RDONLY)
        #expect(leaky > 2)
        defer { close(leaky) }
        let p = Subprocess()
        p.executableURL = URL(fileURLWithPath: "/bin/ls")
        p.arguments = ["/proc/self/fd"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let listed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let fds = Set(listed.split(separator: "\n").compactMap { Int32($0) })
        // 0, 1 and 2, and the one `ls` opened to read the directory.
        #expect(fds.isSuperset(of: [0, 1, 2]), "\(fds)")
        #expect(fds.count <= 4, "\(fds)")
        #expect(!fds.contains(leaky) || fds.count == 4, "\(fds)")
    }

    @Test func anExitCodeAndASignalReadAsFoundationsProcessReadsThem() throws {
        let exits = Subprocess()
        exits.executableURL = URL(fileURLWithPath: "/bin/sh")
        exits.arguments = ["-c", "exit 7"]
        try exits.run()
        exits.waitUntilExit()
        #expect(!exits.isRunning)
        #expect(exits.terminationStatus == 7)

        let sleeps = Subprocess()
        sleeps.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeps.arguments = ["60"]
        sleeps.standardOutput = FileHandle.nullDevice
        try sleeps.run()
        #expect(sleeps.isRunning)
        sleeps.terminate()
        sleeps.waitUntilExit()
        #expect(sleeps.terminationStatus == SIGTERM)
    }

    @Test func aMissingProgramIsAnErrorNotAChild() {
        let p = Subprocess()
        p.executableURL = URL(fileURLWithPath: "/nonexistent/program")
        #expect(throws: SpawnFailed.self) { try p.run() }
        #expect(!p.isRunning)
    }
}
