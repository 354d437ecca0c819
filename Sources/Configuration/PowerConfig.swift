/// The `[battery]` table and the power button of `[buttons]` (docs/config.md, docs/power.md).
extension DeviceConfig {
    public struct Battery: Sendable, Hashable {
        /// Read a fuel gauge on the I²C bus.
        public var enabled = false
        public var gauge: Gauge = .max17048
        /// /dev/i2c-N (the display's bus on a Pi: 1).
        public var bus = 1
        /// The gauge's address; nil: its board's default (MAX17048 0x36, INA219 0x43, PiSugar 3 0x57).
        public var address: Int? = nil
        /// INA219: the shunt resistor in ohms, the cells in series, the current's sign.
        public var shuntOhms = 0.1
        public var cells = 1
        public var invertCurrent = false
        /// The pack's capacity (optional): the drain from the current before minutes of readings.
        public var capacityMah: Int? = nil
        public var lowPercent = 20
        public var veryLowPercent = 10
        public var criticalPercent = 5
        /// Power off at `criticalPercent` (false: warn only).
        public var powerOff = true

        public enum Gauge: String, Sendable, Hashable, CaseIterable { case max17048, ina219, pisugar3 }

        /// The address used: the configured one, else the gauge board's default.
        public var effectiveAddress: Int {
            address ?? (gauge == .max17048 ? 0x36 : gauge == .ina219 ? 0x43 : 0x57)
        }
    }
}

extension ConfigLoader {
    static func battery(_ r: TableReader, _ b: inout DeviceConfig.Battery) {
        if let v = r.bool("enabled") { b.enabled = v }
        if let v = r.choice("gauge", DeviceConfig.Battery.Gauge.self) { b.gauge = v }
        if let v = r.int("bus", 0...31) { b.bus = v }
        if let v = r.int("address", 0x03...0x77, hex: true) { b.address = v }
        if let v = r.double("shunt_ohms", 0.001...10) { b.shuntOhms = v }
        if let v = r.int("cells", 1...4) { b.cells = v }
        if let v = r.bool("invert_current") { b.invertCurrent = v }
        if let v = r.int("capacity_mah", 100...100_000) { b.capacityMah = v }
        if let v = r.int("low_percent", 2...90) { b.lowPercent = v }
        if let v = r.int("very_low_percent", 1...80) { b.veryLowPercent = v }
        if let v = r.int("critical_percent", 0...50) { b.criticalPercent = v }
        if let v = r.bool("power_off") { b.powerOff = v }
        r.finish()
    }

    /// The power button and the battery's levels: a free pin, levels that fall, an address
    /// the gauge can have, INA219-only keys only with the INA219.
    static func powerChecks(_ c: DeviceConfig, line: (String, String) -> Int) -> [ConfigError] {
        var errors: [ConfigError] = []
        if let p = c.buttons.powerPin {
            if c.buttons.pins.contains(p) || c.buttons.buzzerPin == p {
                errors.append(ConfigError(line: line("buttons", "power_pin"), .inconsistent, "power_pin \(p) is also a button or the buzzer pin; use a free GPIO line"))
            }
        }
        let b = c.battery
        if !(b.criticalPercent < b.veryLowPercent && b.veryLowPercent < b.lowPercent) {
            errors.append(ConfigError(line: line("battery", "critical_percent"), .inconsistent,
                                      "battery levels must fall: low_percent (\(b.lowPercent)) > very_low_percent (\(b.veryLowPercent)) > critical_percent (\(b.criticalPercent))"))
        }
        if let a = b.address {
            let ok = switch b.gauge {
            case .max17048: a == 0x36
            case .ina219: (0x40...0x4F).contains(a)
            case .pisugar3: true
            }
            if !ok {
                errors.append(ConfigError(line: line("battery", "address"), .inconsistent,
                                          "address 0x\(String(a, radix: 16)) is not one a \(b.gauge.rawValue) can have (MAX17048: 0x36; INA219: 0x40...0x4F)"))
            }
        }
        return errors
    }
}
