import Configuration
import Testing

/// `[battery]` and the power button (docs/config.md, docs/power.md).
struct PowerConfigTests {
    @Test func batteryAndPowerButtonKeysAreApplied() throws {
        let c = try ConfigLoader.load(text: """
        [buttons]
        power_pin = 4
        power_off_hold_ms = 4000

        [battery]
        enabled = true
        gauge = "ina219"
        bus = 3
        address = 0x42
        shunt_ohms = 0.05
        cells = 2
        invert_current = true
        capacity_mah = 5000
        low_percent = 30
        very_low_percent = 15
        critical_percent = 7
        power_off = false
        """).get()
        #expect(c.buttons.powerPin == 4 && c.buttons.powerOffHoldMs == 4_000)
        let b = c.battery
        #expect(b.enabled && b.gauge == .ina219 && b.bus == 3 && b.effectiveAddress == 0x42 && b.shuntOhms == 0.05 && b.cells == 2)
        #expect(b.invertCurrent && b.capacityMah == 5_000 && b.lowPercent == 30 && b.veryLowPercent == 15 && b.criticalPercent == 7 && !b.powerOff)
        // The rendered config loads back to the same value.
        var expected = c
        expected.bridge.path = expected.bridge.effectivePath
        #expect(try ConfigLoader.load(text: c.renderTOML()).get() == expected)
    }

    @Test func defaultAddressesFollowTheGauge() throws {
        for (gauge, address) in [("max17048", 0x36), ("ina219", 0x43), ("pisugar3", 0x57)] {
            let c = try ConfigLoader.load(text: "[battery]\nenabled = true\ngauge = \"\(gauge)\"\n").get()
            #expect(c.battery.effectiveAddress == address)
        }
    }

    func errors(_ text: String) -> [ConfigError] {
        if case .failure(let e) = ConfigLoader.load(text: text) { return e.errors }
        return []
    }

    @Test func mistakesAreNamedWithTheirLine() {
        let levels = errors("[battery]\nlow_percent = 10\nvery_low_percent = 10\n")
        #expect(levels.contains { $0.message.contains("battery levels must fall") })
        let address = errors("[battery]\ngauge = \"max17048\"\naddress = 0x37\n")
        #expect(address.contains { $0.line == 3 && $0.message.contains("not one a max17048 can have") })
        let pin = errors("[buttons]\npins = [17, 27]\npower_pin = 27\n")
        #expect(pin.contains { $0.line == 3 && $0.message.contains("power_pin 27 is also a button") })
        let gauge = errors("[battery]\ngauge = \"bq27441\"\n")
        #expect(gauge.contains { $0.line == 2 && $0.message.contains("\"max17048\", \"ina219\", \"pisugar3\"") })
        #expect(!errors("[battery]\nshunt_ohms = 0\n").isEmpty && !errors("[battery]\ncells = 5\n").isEmpty)
    }
}
