import Glibc

/// Whether the suite runs under ASan or TSan (`scripts/sanitize` sets `AUTHGATE_SANITIZER`),
/// whose slowdown on two shared cores makes an ordinary answer take several times longer.
public let runsUnderSanitizer = getenv("AUTHGATE_SANITIZER") != nil
