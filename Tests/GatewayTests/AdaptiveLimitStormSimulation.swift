import Foundation
import Gateway
import Testing

/// The storm of issue 32's item 4 in virtual time (``UpstreamSimulation``): 100 closed-loop
/// clients for 12 s, a rotation every 2 s that revokes the tokens at the API, and the
/// default controller compared with the best fixed limit of the same API and seed, over the
/// whole run and after the first 4 s. A measurement, not a check: it prints its table and
/// runs only when `AUTHGATE_SIMULATE_STORM` is set, with `AUTHGATE_SIMULATE_INITIAL` (the
/// initial limit, default the controller's) to try another start and
/// `AUTHGATE_SIMULATE_SEEDS` (default 6) for more seeds:
///
/// ```sh
/// AUTHGATE_SIMULATE_STORM=1 AUTHGATE_SIMULATE_INITIAL=4 swift test --filter AdaptiveLimitStormSimulation
/// ```
@Suite struct AdaptiveLimitStormSimulation {
    /// A model of one of the storm's APIs.
    struct API: Sendable {
        var name: String
        var workers: Int
        var service: ClosedRange<Double>
        var slowdownPerBusy = 0.0
        var contention: (every: Double, range: ClosedRange<Double>)?
    }

    /// The interop resource server with 16 slots of 50-500 ms.
    static let slow = API(name: "16 workers, 50-500 ms (slow)", workers: 16, service: 0.050...0.500)

    static let apis = [
        API(name: "8 workers, 40-80 ms (gunicorn8)", workers: 8, service: 0.040...0.080),
        API(name: "2 workers, 40-80 ms (gunicorn2)", workers: 2, service: 0.040...0.080),
        slow,
        API(
            name: "spare threads, 30-40 ms on busy cores (fast)", workers: 1_000, service: 0.030...0.040,
            contention: (every: 0.05, range: 0.5...2)),
        API(name: "spare threads, slower as it serves more", workers: 1_000, service: 0.010...0.020, slowdownPerBusy: 0.00066),
    ]

    static let enabled = ProcessInfo.processInfo.environment["AUTHGATE_SIMULATE_STORM"] != nil

    /// Answers per second from `from` to `to` seconds.
    func rate(_ api: API, _ parameters: AdaptiveLimit.Parameters, seed: UInt64, from: Double, to: Double) -> Double {
        var sim = UpstreamSimulation(workers: api.workers, clients: 100, seed: seed, parameters: parameters)
        sim.serviceTime = api.service
        sim.slowdownPerBusy = api.slowdownPerBusy
        sim.contention = api.contention
        sim.rotationEvery = 2
        sim.run(until: from)
        let before = sim.answered
        sim.run(until: to)
        return Double(sim.answered - before) / (to - from)
    }

    @Test(.enabled(if: enabled, "a measurement: set AUTHGATE_SIMULATE_STORM to run it"))
    func theDefaultAgainstTheBestFixedLimit() {
        let initial = ProcessInfo.processInfo.environment["AUTHGATE_SIMULATE_INITIAL"].flatMap { Int($0) }
        let parameters = initial.map { AdaptiveLimit.Parameters(initial: $0) } ?? AdaptiveLimit.Parameters()
        let seeds = ProcessInfo.processInfo.environment["AUTHGATE_SIMULATE_SEEDS"].flatMap { UInt64($0) } ?? 6
        print("initial limit \(parameters.initial); the default's answers ÷ the best fixed limit's, seeds 1-\(seeds)")
        print("| API | whole run, per seed | mean | least | after 4 s: mean | least | seeds under 0.6× |")
        print("|---|---|---|---|---|---|---|")
        for api in Self.apis {
            let fixed = [api.workers, api.workers * 3 / 2, 2 * api.workers, 100].filter { $0 <= 100 }
            var whole: [Double] = []
            var late: [Double] = []
            for seed in UInt64(1)...max(1, seeds) {
                func best(from: Double) -> Double {
                    fixed.map { rate(api, .fixed($0), seed: seed, from: from, to: 12) }.max() ?? 0
                }
                whole.append(rate(api, parameters, seed: seed, from: 0, to: 12) / best(from: 0))
                late.append(rate(api, parameters, seed: seed, from: 4, to: 12) / best(from: 4))
            }
            func f(_ x: Double) -> String { String(format: "%.2f", x) }
            let mean = { (xs: [Double]) in xs.reduce(0, +) / Double(xs.count) }
            print(
                "| \(api.name) | \(whole.count > 12 ? "…" : whole.map(f).joined(separator: " ")) | \(f(mean(whole))) | \(f(whole.min() ?? 0)) "
                    + "| \(f(mean(late))) | \(f(late.min() ?? 0)) | \(late.filter { $0 < 0.6 }.count) |")
        }
    }
}
