import Glibc

/// `SOCK_STREAM` as `socket(2)` takes it. Test modules that also see libuv's headers
/// through `@testable import Runtime` can fail to find Glibc's constant, depending on how
/// the compiler batches their files; this module imports only Glibc.
public let streamSocketType = Int32(SOCK_STREAM.rawValue)
