import RideModel
import Sensors

/// The traffic behind a simulated rider and the rear radar that sees it (docs/simulator.md,
/// "Radar"). A scenario sends cars (`at 12m car 70kmh`): each comes into view at the radar's reach
/// (`RadarPicture.reachM`) and closes in at its speed less the rider's, until it passes (range 0)
/// or, slower than the rider, falls out of view. The radar is an ANT+ Bike Radar (device type 40,
/// 8 Hz) whose pages are built as the profile lays them out, so the device's decoder, data source,
/// beeps and column run end to end; `radar-off` makes it send its shutdown page and fall silent.
public struct SimulatedTraffic: Sendable {
    struct Car: Sendable {
        var rangeM: Double
        var speedMps: Double
    }

    /// Cars in view at most (the simulation's bound; the radar reports 8).
    public static let carsMax = 16
    /// Closing at this speed or faster is a fast approach (the radar's threat level 2).
    public static let fastApproachMps = RadarThreatRule.fastApproachMps

    var cars: [Car] = []
    /// Cars sent by the scenario, cars that passed the rider, cars that fell behind out of view.
    public private(set) var carsSent = 0
    public private(set) var carsPassed = 0
    public private(set) var carsDroppedBack = 0
    var lastMs: Int64 = 0
    var pageB = false
    var frames = 0

    public init() { cars.reserveCapacity(Self.carsMax) }

    public var inView: Int { cars.count }

    /// A car comes up behind, at `speedMps`.
    public mutating func add(speedMps: Double, atMs ms: Int64, riderSpeedMps: Double) {
        advance(toMs: ms, riderSpeedMps: riderSpeedMps)
        guard cars.count < Self.carsMax else { return }
        cars.append(Car(rangeM: RadarPicture.reachM, speedMps: speedMps))
        carsSent += 1
    }

    /// Moves the cars on to `ms` with the rider at `riderSpeedMps`.
    public mutating func advance(toMs ms: Int64, riderSpeedMps: Double) {
        let dt = Double(max(0, ms - lastMs)) / 1000
        lastMs = max(lastMs, ms)
        guard dt > 0 else { return }
        for i in cars.indices { cars[i].rangeM -= (cars[i].speedMps - riderSpeedMps) * dt }
        let before = cars.count
        let passed = cars.filter { $0.rangeM <= 0 }.count
        cars.removeAll { $0.rangeM <= 0 || $0.rangeM > RadarPicture.reachM + 10 }
        carsPassed += passed
        carsDroppedBack += before - cars.count - passed
    }

    /// The radar's next page: 48 (the four nearest), or 49 (the next four) every other frame
    /// while more than four are in view; every 64th frame the battery (common page 0x52, "good").
    public mutating func nextPage(riderSpeedMps: Double, into out: inout [UInt8]) {
        frames += 1
        out.removeAll(keepingCapacity: true)
        if frames % 64 == 0 {
            out += [0x52, 0xFF, 0x00, 0x05, 0x00, 0x00, 0x80, 0x23]
            return
        }
        let sorted = cars.sorted { $0.rangeM < $1.rangeM }
        pageB = !pageB && sorted.count > 4
        let first = pageB ? 4 : 0
        var threats: UInt8 = 0, ranges: UInt32 = 0, speeds: UInt16 = 0
        for k in 0..<4 where first + k < min(sorted.count, RadarPicture.targetsMax) {
            let c = sorted[first + k]
            let closing = max(0, c.speedMps - riderSpeedMps)
            let range = UInt32(min(63, max(0, (c.rangeM / ANTRadarField.rangeStepM).rounded())))
            let speed = UInt16(min(15, (closing / ANTRadarField.speedStepMps).rounded()))
            threats |= (closing >= Self.fastApproachMps ? 2 : 1) << UInt8(2 * k)
            ranges |= range << UInt32(6 * k)
            speeds |= speed << UInt16(4 * k)
        }
        out += [pageB ? 49 : 48, threats, 0, UInt8(truncatingIfNeeded: ranges), UInt8(truncatingIfNeeded: ranges >> 8),
                UInt8(truncatingIfNeeded: ranges >> 16), UInt8(truncatingIfNeeded: speeds), UInt8(truncatingIfNeeded: speeds >> 8)]
    }

    /// The page a radar sends when it is switched off (status, shutdown forced).
    public static let shutdownPage: [UInt8] = [0x01, 0x03, 0, 0, 0, 0, 0, 0]
}
