private import CProcess
import Glibc

/// Process-wide protections for a process that holds secrets in memory, applied once at
/// start by `authgate serve`.
///
/// ```swift
/// try ProcessHardening.disableDumping()   // no core dump, no ptrace by the same user
/// ```
public enum ProcessHardening {
    /// Makes the process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): a crash writes no core
    /// file holding tokens or the store key, and other processes of the same user cannot
    /// attach to it or read its memory.
    public static func disableDumping() throws(RuntimeError) {
        try setDumpable(false)
    }

    /// Whether the process is dumpable (`prctl(PR_GET_DUMPABLE)`).
    public static func isDumpable() throws(RuntimeError) -> Bool {
        let rc = ag_process_get_dumpable()
        guard rc >= 0 else { throw .system(errno: errno, "prctl(PR_GET_DUMPABLE)") }
        return rc != 0
    }

    /// Sets the dumpable flag (tests restore it with `true`).
    public static func setDumpable(_ dumpable: Bool) throws(RuntimeError) {
        guard ag_process_set_dumpable(dumpable ? 1 : 0) == 0 else {
            throw .system(errno: errno, "prctl(PR_SET_DUMPABLE)")
        }
    }
}
