import Foundation
import Gateway

/// A seeded generator (SplitMix64), so a simulation draws the same numbers on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// AuthGate in front of a model API, in virtual time: `clients` callers in a closed loop
/// (each sends its next request as soon as its last is answered) go through an
/// ``AdmissionQueue`` whose limit an ``AdaptiveLimit`` sets; the API serves with `workers`
/// workers, first come first served, each request taking a service time drawn from a seeded
/// generator; what finds every worker busy waits in the API's own queue. No sockets, no
/// clock, no sleeps: the next event is always the earliest completion.
struct UpstreamSimulation {
    /// A request at the API.
    struct Job {
        var ticket: UInt64
        var sent: Double
        var inFlight: Int
        var end: Double = 0
        var revoked = false
        /// When it started among the others, so that equal ends complete in starting order.
        var order: UInt64 = 0
    }

    /// The requests at work, a binary min-heap on (end, order): the next completion is found
    /// in O(log n) rather than by a scan of every busy worker, which made the simulations of
    /// APIs with threads to spare take most of a minute.
    struct Busy {
        private(set) var jobs: [Job] = []
        private var started: UInt64 = 0

        var count: Int { jobs.count }
        var first: Job? { jobs.first }

        private func before(_ a: Int, _ b: Int) -> Bool {
            (jobs[a].end, jobs[a].order) < (jobs[b].end, jobs[b].order)
        }

        mutating func insert(_ job: Job) {
            var job = job
            job.order = started
            started += 1
            jobs.append(job)
            var i = jobs.count - 1
            while i > 0, before(i, (i - 1) / 2) {
                jobs.swapAt(i, (i - 1) / 2)
                i = (i - 1) / 2
            }
        }

        mutating func removeFirst() -> Job {
            jobs.swapAt(0, jobs.count - 1)
            let job = jobs.removeLast()
            var i = 0
            while true {
                let left = 2 * i + 1
                let right = left + 1
                var least = i
                if left < jobs.count, before(left, least) { least = left }
                if right < jobs.count, before(right, least) { least = right }
                if least == i { break }
                jobs.swapAt(i, least)
                i = least
            }
            return job
        }

        mutating func revokeAll() {
            for j in jobs.indices { jobs[j].revoked = true }
        }
    }

    var controller: AdaptiveLimit
    var queue: AdmissionQueue
    var workers: Int
    var serviceTime: ClosedRange<Double> = 0.040...0.080
    /// Seconds each request already at work adds to the service time of one that starts: an
    /// API with threads to spare that shares its cores, whose answers slow down as it serves
    /// more at once while its answer rate still grows (0: a pool of independent workers).
    var slowdownPerBusy = 0.0
    /// Shared cores: every this many seconds each service time that starts is scaled by a new
    /// factor drawn from `range` (log-uniform), whatever is in flight: an upstream whose
    /// answers take twice as long in one tenth of a second as in the next because other
    /// processes took the cores, not because of its queue.
    var contention: (every: Double, range: ClosedRange<Double>)?
    private var contentionFactor = 1.0
    private var contentionUntil = 0.0
    var rng: SeededGenerator
    private(set) var now = 0.0
    private var busy = Busy()
    private var waitingAtAPI: [Job] = []
    private var nextTicket: UInt64 = 0
    private var replayTickets: Set<UInt64> = []
    /// A service time to use for the next request that starts, once.
    var nextServiceTime: Double?
    /// Rotations that revoke the token of every request at the API, every this many seconds.
    var rotationEvery: Double?
    private var lastRotation = 0.0

    // What was seen.
    private(set) var answered = 0
    private(set) var replays = 0
    /// Times a first try was admitted while a replay waited.
    private(set) var replaysOvertaken = 0
    private(set) var mostAtAPIQueue = 0
    private(set) var lowestLimit = Int.max
    private var limitArea = 0.0
    private var measuredFrom = 0.0
    private var limitTrace: [(Double, Int)] = []

    init(workers: Int, clients: Int, seed: UInt64, parameters: AdaptiveLimit.Parameters = .init()) {
        self.workers = workers
        self.controller = AdaptiveLimit(parameters)
        self.queue = AdmissionQueue(limit: controller.admitted)
        self.rng = SeededGenerator(state: seed)
        for _ in 0..<clients { arrive(.first) }
    }

    /// The mean admitted limit since the last ``resetMeasurement()``.
    var meanLimit: Double { now > measuredFrom ? limitArea / (now - measuredFrom) : Double(queue.limit) }

    /// Starts measuring the mean and lowest limit from now.
    mutating func resetMeasurement() {
        limitArea = 0
        measuredFrom = now
        lowestLimit = queue.limit
    }

    private mutating func arrive(_ lane: AdmissionQueue.Lane) {
        let ticket = nextTicket
        nextTicket += 1
        if lane == .replay { replayTickets.insert(ticket) }
        if queue.admit(ticket, lane: lane) == .proceed { send(ticket) }
    }

    private mutating func send(_ ticket: UInt64) {
        if replayTickets.remove(ticket) == nil && replayWaiting { replaysOvertaken += 1 }
        let job = Job(ticket: ticket, sent: now, inFlight: queue.inFlight)
        if busy.count < workers {
            start(job)
        } else {
            waitingAtAPI.append(job)
            mostAtAPIQueue = max(mostAtAPIQueue, waitingAtAPI.count)
        }
    }

    private var replayWaiting: Bool { !replayTickets.isEmpty }

    private mutating func start(_ job: Job) {
        var job = job
        if let contention, now >= contentionUntil {
            let range = contention.range
            contentionFactor = exp2(Double.random(in: log2(range.lowerBound)...log2(range.upperBound), using: &rng))
            contentionUntil = now + contention.every
        }
        let service =
            contentionFactor * (nextServiceTime ?? Double.random(in: serviceTime, using: &rng))
            + slowdownPerBusy * Double(busy.count)
        nextServiceTime = nil
        job.end = now + service
        busy.insert(job)
    }

    /// Runs until `time` (virtual seconds).
    mutating func run(until time: Double) {
        while let next = busy.first, next.end <= time {
            let job = busy.removeFirst()
            advance(to: job.end)
            if let every = rotationEvery, now - lastRotation >= every {
                lastRotation = now
                busy.revokeAll()
                for j in waitingAtAPI.indices { waitingAtAPI[j].revoked = true }
            }
            while busy.count < workers, !waitingAtAPI.isEmpty { start(waitingAtAPI.removeFirst()) }
            finish(job)
        }
        advance(to: time)
    }

    private mutating func advance(to time: Double) {
        limitArea += Double(queue.limit) * (time - now)
        now = time
    }

    private mutating func finish(_ job: Job) {
        let outcome: AdaptiveLimit.Outcome = job.revoked ? .superseded : .answered
        let sample = AdaptiveLimit.Sample(latency: .seconds(now - job.sent), inFlight: job.inFlight, outcome: outcome)
        if controller.record(sample, at: .seconds(now)) {
            for ticket in queue.setLimit(controller.admitted) { send(ticket) }
            lowestLimit = min(lowestLimit, queue.limit)
            limitTrace.append((now, queue.limit))
        }
        if let next = queue.release() { send(next) }
        if job.revoked {
            replays += 1
            arrive(.replay)
        } else {
            answered += 1
            arrive(.first)
        }
    }

    /// The limit's changes, `(time, limit)`.
    var trace: [(Double, Int)] { limitTrace }
}
