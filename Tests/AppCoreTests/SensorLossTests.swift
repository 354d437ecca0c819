import Testing
import AppCore
import RideModel

struct SensorLossTests {
    /// A lost sensor's metric shows "--" at once, not its last value for the next seconds.
    @Test(arguments: SensorRole.allCases.filter { !$0.liveQuantities.isEmpty && $0 != .gps }) // the GPS: PositionCoreTests; the radar: RadarCoreTests
    func lostSensorBlanksItsMetricAtOnce(role: SensorRole) {
        var core = AppCore(randomSeed: 1)
        var now = MonotonicInstant(milliseconds: 0)
        core.handle(.command(.start, at: now))
        now = now.advanced(byMs: 3_000)
        core.handle(.tick(now))
        #expect(core.state == .running)
        let (q, metric): (Quantity, Metric) = switch role {
        case .heartRate: (.heartRate, .heartRate)
        case .power: (.power, .power)
        case .speed: (.speed, .speed)
        case .cadence: (.cadence, .cadence)
        case .gps, .radar: (.latitude, .altitude) // not run (filtered out above)
        }
        core.handle(.sensor(SensorStatus(role, .connected), at: now))
        core.handle(.sample(Sample(q, 7, at: now)))
        #expect(core.screen[metric] == 7)
        now = now.advanced(byMs: 200)
        core.handle(.sensor(SensorStatus(role, .lost), at: now))
        #expect(core.screen[metric] == nil, "\(role) lost must show --")
        #expect(core.screen.overlay == .sensorLost(role))
        // Other sensors' values are untouched.
        for other in SensorRole.allCases where other != role {
            #expect(core.screen.sensor(other) != .lost)
        }
        // Back with a fresh value: shown again.
        core.handle(.sensor(SensorStatus(role, .connected), at: now.advanced(byMs: 100)))
        core.handle(.sample(Sample(q, 9, at: now.advanced(byMs: 150))))
        #expect(core.screen[metric] == 9)
        while core.drainEffect() != nil {}
    }
}
