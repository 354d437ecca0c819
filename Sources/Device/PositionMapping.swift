import Configuration
import Sensors

/// The `[gps]` and `[barometer]` tables as data-source entries and pages (docs/gps.md).
extension ConfigMapping {
    /// Onboard receivers rank below every paired sensor: a wheel sensor's speed and distance win
    /// while it delivers, GPS fills in when it does not. The barometer ranks above the GPS for
    /// altitude and climbing.
    public static let barometerPriority = 50
    public static let gpsPriority = 100

    public static func onboardSources(_ c: DeviceConfig) -> [PairedSensor] {
        var out: [PairedSensor] = []
        if c.barometer.enabled {
            out.append(PairedSensor(.onboard(.barometer), provides: QuantitySet(.altitude, .ascent, .descent, .grade), priority: barometerPriority))
        }
        if c.gps.enabled {
            out.append(PairedSensor(.onboard(.gnss), provides: QuantitySet(.latitude, .longitude, .speed, .distance, .altitude, .ascent, .descent, .grade),
                                    priority: gpsPriority))
        }
        return out
    }

    /// RIDE, POWER, LAP; CLIMB with a barometer or GPS; MAP with GPS.
    public static func runningPageCount(_ c: DeviceConfig) -> Int {
        3 + (c.gps.enabled || c.barometer.enabled ? 1 : 0) + (c.gps.enabled ? 1 : 0)
    }
}
