public import Runtime

/// Process-wide protections `authgate serve` applies before it reads any secret: no core
/// file, no same-user `ptrace` (``Runtime/ProcessHardening/disableDumping()``).
public typealias ProcessHardening = Runtime.ProcessHardening
