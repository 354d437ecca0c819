extension DeviceConfig {
    /// The configuration as TOML that `ConfigLoader.load` reads back to the same value
    /// (`bikecomputer config check` prints it as the effective config).
    public func renderTOML() -> String {
        var out = ""
        func line(_ s: String) { out += s + "\n" }
        func q(_ s: String) -> String { TOMLDocument.quoted(s) }
        func list(_ xs: [Int]) -> String { "[" + xs.map(String.init).joined(separator: ", ") + "]" }
        func num(_ d: Double) -> String {
            let s = "\(d)"
            return s.contains(".") || s.contains("e") ? s : s + ".0"
        }

        line("[buttons]")
        line("chip = \(q(buttons.chip))")
        line("pins = \(list(buttons.pins))")
        line("active_low = \(buttons.activeLow)")
        line("bias = \(q(buttons.bias.rawValue))")
        line("long_press_ms = \(buttons.longPressMs)")
        line("debounce_ms = \(buttons.debounceMs)")
        if let b = buttons.buzzerPin { line("buzzer_pin = \(b)") }
        if let p = buttons.powerPin { line("power_pin = \(p)") }
        line("power_off_hold_ms = \(buttons.powerOffHoldMs)")
        line("")
        line("[display]")
        line("type = \(q(display.type.rawValue))")
        if display.type.isSPI {
            line("spi_bus = \(display.spiBus)")
            line("chip_select = \(display.chipSelect)")
            line("spi_speed_hz = \(display.spiSpeedHz)")
            if let p = display.extcominPin { line("extcomin_pin = \(p)") }
        } else {
            line("bus = \(display.bus)")
            line("address = 0x\(String(display.address, radix: 16, uppercase: true))")
            line("height = \(display.height)")
            line("contrast = \(display.contrast)")
            line("rotate_180 = \(display.rotate180)")
        }
        line("")
        line("[bridge]")
        line("transport = \(q(bridge.transport.rawValue))")
        line("path = \(q(bridge.effectivePath))")
        line("baud = \(bridge.baud)")
        for s in sensors {
            line("")
            line("[[sensor]]")
            line("transport = \(q(s.transport.rawValue))")
            line("role = \(q(s.role.rawValue))")
            if let n = s.antDeviceNumber { line("ant_device_number = \(n)") }
            if let t = s.antDeviceType { line("ant_device_type = \(t)") }
            if let a = s.bleAddress { line("ble_address = \(q(a))") }
            if let n = s.name { line("name = \(q(n))") }
        }
        line("")
        line("[bike]")
        line("wheel_circumference_mm = \(bike.wheelCircumferenceMm)")
        line("")
        line("[rider]")
        line("age = \(rider.age)")
        line("resting_hr = \(rider.restingHr)")
        line("max_hr = \(rider.maxHr)")
        if let l = rider.lthr { line("lthr = \(l)") }
        line("ftp = \(rider.ftpW)")
        line("")
        line("[zones]")
        line("hr_model = \(q(zones.hrModel.rawValue))")
        if !zones.hrBoundaries.isEmpty { line("hr_boundaries = \(list(zones.hrBoundaries))") }
        if !zones.powerBoundaries.isEmpty { line("power_boundaries = \(list(zones.powerBoundaries))") }
        line("")
        line("[training]")
        line("auto_pause = \(training.autoPause)")
        line("auto_pause_speed_kmh = \(num(training.autoPauseSpeedKmh))")
        line("auto_lap = \(training.autoLap)")
        line("auto_lap_distance_m = \(training.autoLapDistanceM)")
        line("average_cadence_zeros = \(training.averageCadenceZeros)")
        line("average_power_zeros = \(training.averagePowerZeros)")
        line("")
        line("[storage]")
        line("data_dir = \(q(storage.dataDir))")
        line("fsync_interval_ms = \(storage.fsyncIntervalMs)")
        line("")
        line("[control]")
        line("socket = \(q(control.socket))")
        line("")
        line("[companion]")
        line("enabled = \(companion.enabled)")
        line("listen = \(q(companion.listen))")
        line("")
        line("[gps]")
        line("enabled = \(gps.enabled)")
        line("gpsd = \(q(gps.gpsd))")
        line("")
        line("[barometer]")
        line("enabled = \(barometer.enabled)")
        line("bus = \(barometer.bus)")
        line("address = 0x\(String(barometer.address, radix: 16, uppercase: true))")
        line("")
        line("[battery]")
        line("enabled = \(battery.enabled)")
        line("gauge = \(q(battery.gauge.rawValue))")
        line("bus = \(battery.bus)")
        if let a = battery.address { line("address = 0x\(String(a, radix: 16, uppercase: true))") }
        line("shunt_ohms = \(num(battery.shuntOhms))")
        line("cells = \(battery.cells)")
        line("invert_current = \(battery.invertCurrent)")
        if let c = battery.capacityMah { line("capacity_mah = \(c)") }
        line("low_percent = \(battery.lowPercent)")
        line("very_low_percent = \(battery.veryLowPercent)")
        line("critical_percent = \(battery.criticalPercent)")
        line("power_off = \(battery.powerOff)")
        return out
    }
}
