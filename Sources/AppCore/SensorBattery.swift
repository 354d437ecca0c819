import RideModel

extension AppCore {
    /// A sensor battery below this (%) is an alert when a ride starts: a strap that dies
    /// mid-ride should not be the first warning.
    public static let sensorBatteryLowPercent = 15

    /// At the start of a ride: the weakest sensor in use whose battery is under
    /// `sensorBatteryLowPercent` gets an alert (one overlay; the others show in `ctl status`,
    /// `bikecomputer sensors` and on the idle screen).
    mutating func alertLowSensorBattery(at now: MonotonicInstant) {
        var weakest: (role: SensorRole, percent: Int)?
        for role in SensorRole.allCases {
            let i = Int(role.rawValue)
            guard screen.sensors[i] != .notConfigured, let b = screen.sensorBatteryPercent[i],
                  b < Self.sensorBatteryLowPercent else { continue }
            if weakest == nil || b < weakest!.percent { weakest = (role, b) }
        }
        if let w = weakest { showOverlay(.lowSensorBattery(w.role, percent: w.percent), at: now) }
    }
}
