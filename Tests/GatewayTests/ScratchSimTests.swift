import Gateway
import Testing

@Suite struct ScratchSimTests {
    @Test func slower() {
        for c in [2, 8, 32] {
            var sim = UpstreamSimulation(workers: c, clients: max(100, 4 * c), seed: 3)
            sim.run(until: 30)
            sim.serviceTime = 0.080...0.160
            sim.resetMeasurement()
            sim.run(until: 40)
            let a = (sim.meanLimit, sim.lowestLimit)
            sim.resetMeasurement()
            sim.run(until: 60)
            let b = (sim.meanLimit, sim.lowestLimit)
            sim.serviceTime = 0.020...0.040
            sim.resetMeasurement()
            sim.run(until: 80)
            print("SLOW", c, a, b, sim.meanLimit, sim.lowestLimit)
        }
    }
}
