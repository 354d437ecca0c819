import Battery
import Testing

/// The fuel gauges' registers decoded as their data sheets define them (the VM test
/// Tests/vm/test_vm_battery.py reads the same values through i2c-stub and the kernel).
struct FuelGaugeTests {
    func decode(_ g: FuelGauge, _ values: [UInt16], _ settings: BatterySettings = BatterySettings()) -> BatteryReading? {
        values.withUnsafeBufferPointer { g.decode($0, settings: settings) }
    }

    /// MAX17048: VCELL 78.125 µV per LSB, SOC 1/256 % per LSB, CRATE 0.208 %/h per LSB, signed.
    @Test func max17048() throws {
        // 0xCE40 = 52 800 → 4.125 V; 0x5A80 → 90 + 128/256 = 90.5 %; 0xFFD9 = −39 → −8.112 %/h.
        let r = try #require(decode(.max17048, [0xCE40, 0x5A80, 0xFFD9]))
        #expect(abs(r.voltageV! - 4.125) < 1e-9)
        #expect(r.percent == 90.5)
        #expect(abs(r.chargeRatePercentPerHour! - (-8.112)) < 1e-9)
        #expect(!r.percentFromVoltage && r.currentA == nil && r.externalPower == nil)
        // Charging: CRATE +0x0030 = 48 → +9.984 %/h. SOC above 100 % (the model's residual) shows 100.
        let c = try #require(decode(.max17048, [0xD6D8, 0x6480, 0x0030]))
        #expect(abs(c.chargeRatePercentPerHour! - 9.984) < 1e-9 && c.percent == 100)
        // A cell voltage no lithium cell has (no battery, a glitch): no reading.
        #expect(decode(.max17048, [0x0000, 0x5A80, 0]) == nil)
        #expect(decode(.max17048, [0xFFFF, 0x5A80, 0]) == nil)
    }

    @Test func max17048Probe() {
        #expect(FuelGauge.max17048.probeProblem(0x0011) == nil)
        #expect(FuelGauge.max17048.probeProblem(0x0012) == nil)
        #expect(FuelGauge.max17048.probeProblem(0x0003)?.contains("not a MAX17048/MAX17049's 0x001X") == true)
        #expect(FuelGauge.max17048.probeProblem(0xFFFF) != nil)
    }

    /// INA219: shunt voltage 10 µV per LSB, signed (data sheet: +320 mV = 7D00h, −320 mV = 8300h);
    /// bus voltage in bits 15…3, 4 mV per LSB (32 V full scale = 8000 = 1F40h, in the register FA00h).
    @Test func ina219() throws {
        var s = BatterySettings()
        s.gauge = .ina219
        s.shuntOhms = 0.1
        // 4.100 V = 1025 × 4 mV → 1025 << 3 = 0x2008 (CNVR and OVF clear); shunt 0x7D00 = +320 mV.
        let charging = try #require(decode(.ina219, [0x7D00, 0x2008], s))
        #expect(abs(charging.voltageV! - 4.1) < 1e-9)
        #expect(abs(charging.currentA! - 3.2) < 1e-9) // 0.32 V / 0.1 Ω, into the battery
        #expect(charging.percentFromVoltage && abs(charging.percent! - 90) < 1e-9) // 4.10 V on the curve
        let draining = try #require(decode(.ina219, [0x8300, 0x2008 | 0b11], s)) // CNVR and OVF set: same volts
        #expect(abs(draining.currentA! - (-3.2)) < 1e-9 && abs(draining.voltageV! - 4.1) < 1e-9)
        // The other wiring: a positive shunt voltage is a discharge.
        s.invertCurrent = true
        #expect(abs(decode(.ina219, [0x7D00, 0x2008], s)!.currentA! - (-3.2)) < 1e-9)
        // Two cells in series (UPS HAT (B)): 7.40 V is 3.70 V a cell, 20 %.
        s.cells = 2
        let two = try #require(decode(.ina219, [0xFFCE, UInt16(1850) << 3], s)) // −50 × 10 µV = −0.5 mV
        #expect(abs(two.voltageV! - 7.4) < 1e-9 && abs(two.percent! - 20) < 1e-9 && abs(two.currentA! - 0.005) < 1e-12)
        // 32 V full scale is no cell: no reading.
        #expect(decode(.ina219, [0, 0xFA00], BatterySettings()) == nil)
    }

    @Test func ina219Probe() {
        #expect(FuelGauge.ina219.probeProblem(0x399F) == nil) // power-on reset value
        #expect(FuelGauge.ina219.probeProblem(0x019F) == nil) // Waveshare's 16 V / ÷2 setting
        #expect(FuelGauge.ina219.probeProblem(0xFFFF) != nil)
        #expect(FuelGauge.ina219.probeProblem(0x4000) != nil)
    }

    /// PiSugar 3 (docs.pisugar.com "PiSugar 3 I2C"): 0x02 bit 7 external power, 0x03 bits 4+3 the
    /// power button's soft power-off, 0x22/0x23 voltage in mV (high, low), 0x2A percent.
    @Test func pisugar3() throws {
        // 3 912 mV = 0x0F48; 67 %; USB in; soft power-off enabled (bit 4) but not asked (bit 3).
        let r = try #require(decode(.pisugar3, [0x80, 0x10, 0x0F, 0x48, 67]))
        #expect(r.percent == 67 && abs(r.voltageV! - 3.912) < 1e-9 && r.externalPower == true && !r.powerButtonRequest)
        let asked = try #require(decode(.pisugar3, [0x00, 0x18, 0x0F, 0x48, 67]))
        #expect(asked.powerButtonRequest && asked.externalPower == false)
        // Bit 3 without bit 4 (soft power-off not enabled) is no request.
        #expect(decode(.pisugar3, [0x00, 0x08, 0x0F, 0x48, 67])!.powerButtonRequest == false)
        #expect(decode(.pisugar3, [0, 0, 0x0F, 0x48, 101]) == nil)
        #expect(decode(.pisugar3, [0, 0, 0, 0, 50]) == nil)
        // Clearing a request: unlock, control2 without bit 3, lock.
        let writes = PiSugar3.clearPowerOffRequest(control2: 0x18)
        #expect(writes.map { [$0.register, $0.value] } == [[0x0B, 0x29], [0x03, 0x10], [0x0B, 0x00]])
    }

    @Test func everyGaugeReadsWhatItsDecoderTakes() {
        for g in FuelGauge.allCases {
            #expect(g.registers.count <= FuelGauge.registersMax)
            #expect(g.addresses.contains(g.defaultAddress))
        }
    }

    @Test func lithiumCellCurveIsMonotoneAndBounded() {
        var last = -1.0
        for mv in stride(from: 2_500, through: 4_500, by: 5) {
            let p = LithiumCell.percent(atRestVolts: Double(mv) / 1000)
            #expect(p >= last && p >= 0 && p <= 100, "\(mv) mV → \(p) %")
            last = p
        }
        #expect(LithiumCell.percent(atRestVolts: 3.3) == 0 && LithiumCell.percent(atRestVolts: 4.2) == 100)
        #expect(abs(LithiumCell.percent(atRestVolts: 3.85) - 54) < 1e-9) // halfway between 45 and 63
        #expect(LithiumCell.percent(atRestVolts: .nan) == 0)
    }
}
