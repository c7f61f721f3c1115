import Glibc

/// The subcommands that take their signals through a service group's signal sources, and
/// which signals: SIGTERM and SIGINT stop them, SIGHUP reloads `serve`.
let trappedSignals: [String: [Int32]] = ["serve": [SIGINT, SIGTERM, SIGHUP], "dev": [SIGINT, SIGTERM]]

/// Blocks `signals` in the calling thread and in every thread it starts from then on. A
/// signal source (signalfd, under libdispatch) sees a signal only while no thread could
/// take it instead, so the main thread blocks them before any other thread starts.
func blockSignals(_ signals: [Int32]) {
    mask(signals, SIG_BLOCK)
}

/// Unblocks `signals` in the calling thread and in every thread it starts from then on: a
/// command started by a process that blocks them (a test runner, a supervisor) still ends
/// on Ctrl-C, or runs its own handlers (`authgate events`).
func unblockSignals(_ signals: [Int32]) {
    mask(signals, SIG_UNBLOCK)
}

private func mask(_ signals: [Int32], _ how: Int32) {
    var set = sigset_t()
    sigemptyset(&set)
    for s in signals { sigaddset(&set, s) }
    pthread_sigmask(how, &set, nil)
}
