import AppCore
import Battery
import Device
import RideModel

/// The unit's battery in the simulator (`battery START% DRAIN%/h` in a scenario, docs/power.md):
/// a pack that drains at its rate (charges at `chargeRatePercentPerHour` while the charger is
/// in), read like a MAX17048 every `BatteryComponent.periodMs` of simulated time; and the power
/// port the runtime asks when it powers off (the simulated board goes dark until `power-on`).
final class SimulatedBattery: PowerPort {
    static let periodMs: Int64 = 2_000
    static let chargeRatePercentPerHour = 40.0

    let pack: Scenario.BatteryPack
    var percent: Double
    var charging = false
    var lastMs: Int64 = 0
    var nextReadingMs: Int64 = 0
    /// The power-off the runtime asked for, not yet carried out by the run.
    var powerOffAsked: PowerOffReason?
    private(set) var powerOffs = 0

    init(_ pack: Scenario.BatteryPack) {
        self.pack = pack
        percent = pack.startPercent
    }

    /// The charge moved on to `ms` (draining while the unit runs, charging with the charger).
    func advance(to ms: Int64, running: Bool) {
        let hours = Double(max(0, ms - lastMs)) / 3_600_000
        lastMs = max(lastMs, ms)
        if charging { percent = min(100, percent + Self.chargeRatePercentPerHour * hours) }
        else if running { percent = max(0, percent - pack.drainPercentPerHour * hours) }
    }

    /// A reading as a MAX17048 gives it: the charge, the cell voltage on a lithium cell's curve,
    /// the charge rate.
    func reading() -> BatteryReading {
        var r = BatteryReading()
        r.percent = percent
        r.voltageV = Self.volts(percent)
        r.chargeRatePercentPerHour = charging ? Self.chargeRatePercentPerHour : -pack.drainPercentPerHour
        return r
    }

    /// The rest voltage for a charge, from `LithiumCell.curve` read backwards.
    static func volts(_ p: Double) -> Double {
        let c = LithiumCell.curve
        for i in 1..<c.count where p <= c[i].percent {
            let (v0, p0) = c[i - 1], (v1, p1) = c[i]
            return v0 + (v1 - v0) * (p - p0) / max(1e-9, p1 - p0)
        }
        return c.last!.volts
    }

    func requestPowerOff(_ reason: PowerOffReason) -> String? {
        powerOffAsked = reason
        powerOffs += 1
        return nil
    }
}

extension Scenario {
    /// With a battery the app core reads its gauge (the same settings as a board's `[battery]`).
    func withBattery(_ c: AppConfiguration) -> AppConfiguration {
        guard battery != nil else { return c }
        var c = c
        c.battery.enabled = true
        return c
    }
}
