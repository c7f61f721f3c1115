import Runtime
import Testing

/// `authgate serve` makes itself non-dumpable: no core file, no ptrace by the same user.
@Suite(.serialized) struct ProcessHardeningTests {
    @Test func disablingDumpingMakesTheProcessNonDumpable() throws {
        #expect(try ProcessHardening.isDumpable())
        try ProcessHardening.disableDumping()
        defer { try? ProcessHardening.setDumpable(true) }
        #expect(try ProcessHardening.isDumpable() == false)
    }
}
