/// The fuel gauges the unit reads (docs/power.md, "Battery boards"): register maps and what
/// their values mean. Each is read the same way by the board's driver: a probe register checked
/// once when the gauge is opened, then a fixed list of registers (bytes, or 16-bit words sent
/// most significant byte first) every `BatteryComponent.periodMs`.
public enum FuelGauge: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Maxim (Analog Devices) MAX17048/MAX17049 ModelGauge at 0x36: state of charge straight
    /// from the chip (its model of a lithium cell), the cell voltage and the charge rate.
    /// On Adafruit's and SparkFun's LiPo fuel-gauge boards and many Pi UPS boards (Geekworm X120x).
    case max17048
    /// Texas Instruments INA219 current and voltage monitor (0x40…0x4F) as on Waveshare's UPS
    /// HATs (0x42, 0x43 on the UPS HAT (C) for the Zero): the battery's voltage and current; the
    /// charge is estimated from the voltage (`LithiumCell`), the drain from the current.
    case ina219
    /// PiSugar 3 (and 3 Plus) at 0x57: the board's own MCU reports the charge in percent, the
    /// battery voltage, whether USB power is in, and its power button's soft power-off.
    case pisugar3

    public var description: String { rawValue }

    /// The address the board ships with.
    public var defaultAddress: UInt8 {
        switch self {
        case .max17048: 0x36
        case .ina219: 0x43
        case .pisugar3: 0x57
        }
    }

    /// Addresses the chip can be strapped to.
    public var addresses: ClosedRange<UInt8> {
        switch self {
        case .max17048: 0x36...0x36
        case .ina219: 0x40...0x4F
        case .pisugar3: 0x08...0x77 // its I²C address can be reprogrammed
        }
    }

    /// How one register is read.
    public enum Width: Sendable, Hashable {
        /// SMBus read byte.
        case byte
        /// SMBus read word, the chip sending its most significant byte first.
        case wordBigEndian
    }

    public struct Register: Sendable, Hashable {
        public var address: UInt8
        public var width: Width
        public init(_ address: UInt8, _ width: Width) {
            self.address = address
            self.width = width
        }
    }

    /// The register read once at open to check that the expected chip answers.
    public var probe: Register {
        switch self {
        case .max17048: Register(MAX17048.version, .wordBigEndian)
        case .ina219: Register(INA219.configuration, .wordBigEndian)
        case .pisugar3: Register(PiSugar3.percent, .byte)
        }
    }

    /// The registers read at every reading, in this order (`decode` takes their values so).
    public var registers: [Register] {
        switch self {
        case .max17048: [Register(MAX17048.vcell, .wordBigEndian), Register(MAX17048.soc, .wordBigEndian),
                         Register(MAX17048.crate, .wordBigEndian)]
        case .ina219: [Register(INA219.shuntVoltage, .wordBigEndian), Register(INA219.busVoltage, .wordBigEndian)]
        case .pisugar3: [Register(PiSugar3.control1, .byte), Register(PiSugar3.control2, .byte),
                         Register(PiSugar3.voltageHigh, .byte), Register(PiSugar3.voltageLow, .byte),
                         Register(PiSugar3.percent, .byte)]
        }
    }

    /// Registers read per reading, at most (the driver's buffer).
    public static let registersMax = 5

    /// Why the probe says this is not the chip configured (nil: it is).
    public func probeProblem(_ value: UInt16) -> String? {
        switch self {
        case .max17048:
            // VERSION reads 0x001_ on the MAX17048/MAX17049 (the MAX17043/44 read 0x0003/0x0004).
            return value & 0xFFF0 == 0x0010 ? nil
                : "its VERSION register reads 0x\(Self.hex(value, 4)), not a MAX17048/MAX17049's 0x001X"
        case .ina219:
            // Configuration: bit 15 (reset) reads 0 and bit 14 is unused (0); 0xFFFF or a set
            // bit 14 is no INA219.
            return value & 0xC000 == 0 ? nil
                : "its configuration register reads 0x\(Self.hex(value, 4)), which no INA219 holds (bits 15 and 14 read 0)"
        case .pisugar3:
            return value <= 100 ? nil : "its battery register (0x2A) reads \(value), not a percentage"
        }
    }

    /// What the registers say, from their values in `registers` order. nil when they hold
    /// what the chip never reports (a bus glitch, a chip still starting): the reading is
    /// skipped and counted.
    public func decode(_ values: UnsafeBufferPointer<UInt16>, settings: BatterySettings) -> BatteryReading? {
        precondition(values.count >= registers.count, "\(self): \(values.count) register values for \(registers.count) registers")
        switch self {
        case .max17048: return MAX17048.decode(vcell: values[0], soc: values[1], crate: values[2])
        case .ina219:
            return INA219.decode(shunt: values[0], bus: values[1], shuntOhms: settings.shuntOhms, cells: settings.cells,
                                 chargingCurrentPositive: !settings.invertCurrent)
        case .pisugar3:
            return PiSugar3.decode(control1: UInt8(truncatingIfNeeded: values[0]), control2: UInt8(truncatingIfNeeded: values[1]),
                                   voltageHigh: UInt8(truncatingIfNeeded: values[2]), voltageLow: UInt8(truncatingIfNeeded: values[3]),
                                   percent: UInt8(truncatingIfNeeded: values[4]))
        }
    }

    static func hex(_ v: UInt16, _ digits: Int) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - h.count)) + h
    }
}

/// MAX17048/MAX17049 registers (Maxim MAX17048/MAX17049 data sheet, "Register Summary"): 16-bit,
/// most significant byte first.
public enum MAX17048 {
    /// ADC measurement of the cell voltage: 78.125 µV per LSB (MAX17049: per cell of two).
    public static let vcell: UInt8 = 0x02
    /// State of charge: the high byte in %, the low byte in 1/256 %.
    public static let soc: UInt8 = 0x04
    public static let mode: UInt8 = 0x06
    /// Production version, 0x001_.
    public static let version: UInt8 = 0x08
    /// RCOMP (high byte, default 0x97) and the alert bits (low byte).
    public static let config: UInt8 = 0x0C
    /// Approximate charge or discharge rate: 0.208 %/h per LSB, signed (positive: charging).
    public static let crate: UInt8 = 0x16

    public static let vcellVoltsPerLSB = 78.125e-6
    public static let crateLSBPercentPerHour = 0.208

    /// SOC above 100 % happens (the model's residual capacity: the data sheet clamps at the
    /// register's limits, up to 255.99 %); it is shown as 100.
    public static func decode(vcell: UInt16, soc: UInt16, crate: UInt16) -> BatteryReading? {
        let volts = Double(vcell) * vcellVoltsPerLSB
        // A cell outside 2.0…5.0 V is no lithium cell a Pi runs from: a glitch, or no battery.
        guard volts >= 2.0, volts <= 5.0 else { return nil }
        var r = BatteryReading()
        r.percent = min(100, Double(soc) / 256)
        r.voltageV = volts
        r.chargeRatePercentPerHour = Double(Int16(bitPattern: crate)) * crateLSBPercentPerHour
        return r
    }
}

/// INA219 registers (TI INA219 data sheet SBOS448, "Register Maps"): 16-bit, most significant
/// byte first. The app only reads: it neither resets nor calibrates the chip (the board's own
/// software may have set it up); the current comes from the shunt voltage and the configured
/// shunt resistor, so the calibration register is not needed.
public enum INA219 {
    public static let configuration: UInt8 = 0x00
    /// Shunt voltage: signed, 10 µV per LSB (the sign bits extended whatever the PGA range).
    public static let shuntVoltage: UInt8 = 0x01
    /// Bus voltage: bits 15…3, 4 mV per LSB; bit 1 CNVR (conversion ready), bit 0 OVF.
    public static let busVoltage: UInt8 = 0x02

    public static let shuntVoltsPerLSB = 10e-6
    public static let busVoltsPerLSB = 4e-3

    /// - Parameters:
    ///   - cells: cells in series (Waveshare's UPS HAT (C): 1; UPS HAT (B): 2).
    ///   - chargingCurrentPositive: a positive shunt voltage means current into the battery.
    public static func decode(shunt: UInt16, bus: UInt16, shuntOhms: Double, cells: Int,
                              chargingCurrentPositive: Bool) -> BatteryReading? {
        precondition(shuntOhms > 0 && cells >= 1, "shunt \(shuntOhms) Ω, \(cells) cells")
        let volts = Double(bus >> 3) * busVoltsPerLSB
        let cellVolts = volts / Double(cells)
        guard cellVolts >= 2.0, cellVolts <= 5.0 else { return nil }
        let shuntVolts = Double(Int16(bitPattern: shunt)) * shuntVoltsPerLSB
        var r = BatteryReading()
        r.voltageV = volts
        r.currentA = (chargingCurrentPositive ? 1 : -1) * shuntVolts / shuntOhms
        r.percent = LithiumCell.percent(atRestVolts: cellVolts)
        r.percentFromVoltage = true
        return r
    }
}

/// PiSugar 3 registers (docs.pisugar.com, "PiSugar 3 I2C"): bytes.
public enum PiSugar3 {
    /// Bit 7: external (USB) power connected.
    public static let control1: UInt8 = 0x02
    /// Bits 4 and 3 both set: the power button asked for a soft power-off (bit 4 enables it,
    /// bit 3 is the request, cleared by the host).
    public static let control2: UInt8 = 0x03
    /// Write `writeUnlock` before changing another register, `writeLock` after.
    public static let writeProtection: UInt8 = 0x0B
    public static let writeUnlock: UInt8 = 0x29
    public static let writeLock: UInt8 = 0x00
    /// Battery voltage in mV, high byte then low byte.
    public static let voltageHigh: UInt8 = 0x22
    public static let voltageLow: UInt8 = 0x23
    /// Battery charge, % (the board's MCU estimates it from the voltage).
    public static let percent: UInt8 = 0x2A

    public static let externalPowerBit: UInt8 = 0x80
    public static let softPowerOffBits: UInt8 = 0x18
    public static let softPowerOffRequestBit: UInt8 = 0x08

    public static func decode(control1: UInt8, control2: UInt8, voltageHigh: UInt8, voltageLow: UInt8,
                              percent: UInt8) -> BatteryReading? {
        let millivolts = Int(voltageHigh) << 8 | Int(voltageLow)
        guard percent <= 100, millivolts >= 2_000, millivolts <= 5_000 else { return nil }
        var r = BatteryReading()
        r.percent = Double(percent)
        r.voltageV = Double(millivolts) / 1000
        r.externalPower = control1 & externalPowerBit != 0
        r.powerButtonRequest = control2 & softPowerOffBits == softPowerOffBits
        return r
    }

    /// The writes that clear a soft power-off request (`control2` as read), so the next boot
    /// does not take it for a new one: unlock, the register without its request bit, lock.
    public static func clearPowerOffRequest(control2: UInt8) -> [(register: UInt8, value: UInt8)] {
        [(writeProtection, writeUnlock), (Self.control2, control2 & ~softPowerOffRequestBit), (writeProtection, writeLock)]
    }
}

/// A lithium-ion (or lithium-polymer) cell's charge from its voltage, for gauges that measure
/// voltage only (the INA219 boards). A typical 3.7 V cell at rest, discharged slowly: the curve
/// is approximate (± 10 % of charge in the flat middle, worse under load, which pulls the
/// voltage down), which is why the monitor smooths it and a real fuel gauge is better.
public enum LithiumCell {
    /// (volts at rest, % charge), rising. Between points the charge is interpolated linearly.
    public static let curve: [(volts: Double, percent: Double)] = [
        (3.30, 0), (3.50, 3), (3.60, 7), (3.65, 12), (3.70, 20), (3.75, 32), (3.80, 45),
        (3.90, 63), (4.00, 78), (4.10, 90), (4.20, 100),
    ]

    public static func percent(atRestVolts v: Double) -> Double {
        guard v.isFinite else { return 0 }
        guard v > curve[0].volts else { return 0 }
        for i in 1..<curve.count where v <= curve[i].volts {
            let (v0, p0) = curve[i - 1], (v1, p1) = curve[i]
            return p0 + (p1 - p0) * (v - v0) / (v1 - v0)
        }
        return 100
    }
}
