/// The Bosch BMP280 / BME280 pressure sensor's register map and its compensation (datasheet
/// BST-BMP280-DS001, §3.11 and §4): the pure half of the driver. The board's driver
/// (BoardHardware.BMP280Sensor) moves the bytes; this turns them into pascals and degrees.
public enum BMP280 {
    /// 7-bit I²C addresses: SDO to ground (most breakouts) or to VDDIO.
    public static let addressPrimary: UInt8 = 0x76
    public static let addressSecondary: UInt8 = 0x77

    /// Register addresses.
    public enum Register {
        /// Calibration words dig_T1…dig_P9, little-endian, 24 bytes from here.
        public static let calibration: UInt8 = 0x88
        public static let chipID: UInt8 = 0xD0
        /// Write `resetCommand` for a power-on reset.
        public static let reset: UInt8 = 0xE0
        /// Bit 3 `measuring`, bit 0 `im_update` (NVM copy in progress).
        public static let status: UInt8 = 0xF3
        /// osrs_t[7:5] osrs_p[4:2] mode[1:0].
        public static let controlMeasurement: UInt8 = 0xF4
        /// t_sb[7:5] filter[4:2] spi3w_en[0].
        public static let config: UInt8 = 0xF5
        /// press_msb, press_lsb, press_xlsb, temp_msb, temp_lsb, temp_xlsb: 6 bytes from here.
        public static let data: UInt8 = 0xF7
    }

    public static let calibrationBytes = 24
    public static let dataBytes = 6
    public static let resetCommand: UInt8 = 0xB6
    /// Chip ids: BMP280 (0x58; 0x56/0x57 on engineering samples) and BME280 (0x60, the same
    /// pressure and temperature part plus humidity, which the app does not read).
    public static let chipIDs: [UInt8] = [0x56, 0x57, 0x58, 0x60]

    /// The configuration the app writes (docs/gps.md, "Barometer"): normal mode (the sensor
    /// measures continuously, so a read never waits for a conversion), pressure oversampling ×16,
    /// temperature ×2, IIR filter coefficient 16, standby 62.5 ms: a new filtered value every
    /// ≈ 0.1 s, RMS noise ≈ 0.2 Pa (≈ 2 cm of altitude). The app reads it once a second.
    public static let controlMeasurementValue: UInt8 = (0b010 << 5) | (0b101 << 2) | 0b11
    public static let configValue: UInt8 = (0b001 << 5) | (0b100 << 2)

    /// The sensor's factory calibration (trimming parameters).
    public struct Calibration: Sendable, Hashable {
        public var t1: UInt16, t2: Int16, t3: Int16
        public var p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16, p6: Int16, p7: Int16, p8: Int16, p9: Int16

        public init(t1: UInt16, t2: Int16, t3: Int16, p1: UInt16, p2: Int16, p3: Int16, p4: Int16, p5: Int16,
                    p6: Int16, p7: Int16, p8: Int16, p9: Int16) {
            self.t1 = t1; self.t2 = t2; self.t3 = t3
            self.p1 = p1; self.p2 = p2; self.p3 = p3; self.p4 = p4; self.p5 = p5
            self.p6 = p6; self.p7 = p7; self.p8 = p8; self.p9 = p9
        }

        /// From the 24 bytes at 0x88; nil when they cannot be a real part's (dig_P1 = 0 would
        /// divide by zero; all-0x00 or all-0xFF is an unpowered or absent chip).
        public init?(bytes b: [UInt8]) {
            guard b.count >= BMP280.calibrationBytes else { return nil }
            func u(_ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
            func s(_ i: Int) -> Int16 { Int16(bitPattern: u(i)) }
            self.init(t1: u(0), t2: s(2), t3: s(4), p1: u(6), p2: s(8), p3: s(10), p4: s(12), p5: s(14),
                      p6: s(16), p7: s(18), p8: s(20), p9: s(22))
            let bytes = b.prefix(BMP280.calibrationBytes)
            guard p1 != 0, t1 != 0, !bytes.allSatisfy({ $0 == 0 }), !bytes.allSatisfy({ $0 == 0xFF }) else { return nil }
        }
    }

    /// Raw 20-bit readings from the 6 data bytes.
    public struct Raw: Sendable, Hashable {
        public var pressure: Int32
        public var temperature: Int32

        public init(pressure: Int32, temperature: Int32) {
            self.pressure = pressure
            self.temperature = temperature
        }

        /// From the 6 bytes at 0xF7; nil for 0x80000 (the value of a channel that was skipped or
        /// has not been measured yet since reset).
        public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
            guard bytes.count >= BMP280.dataBytes else { return nil }
            var it = bytes.makeIterator()
            var b: (Int32, Int32, Int32, Int32, Int32, Int32) = (0, 0, 0, 0, 0, 0)
            b.0 = Int32(it.next()!); b.1 = Int32(it.next()!); b.2 = Int32(it.next()!)
            b.3 = Int32(it.next()!); b.4 = Int32(it.next()!); b.5 = Int32(it.next()!)
            pressure = b.0 << 12 | b.1 << 4 | b.2 >> 4
            temperature = b.3 << 12 | b.4 << 4 | b.5 >> 4
            guard pressure != 0x80000, temperature != 0x80000 else { return nil }
        }
    }

    /// A compensated reading.
    public struct Reading: Sendable, Hashable {
        /// Temperature in 0.01 °C (datasheet `T`).
        public var temperatureCentidegrees: Int32
        /// Pressure in Pa as Q24.8 (datasheet 64-bit `p`).
        public var pressureQ24_8: UInt32
        /// The datasheet's `t_fine`.
        public var tFine: Int32

        public var temperatureC: Double { Double(temperatureCentidegrees) / 100 }
        public var pressurePa: Double { Double(pressureQ24_8) / 256 }
    }

    /// The datasheet's integer compensation (32-bit temperature, 64-bit pressure), exactly:
    /// the same inputs give the same bits as Bosch's reference code. nil when the pressure
    /// formula would divide by zero.
    public static func compensate(_ raw: Raw, _ c: Calibration) -> Reading? {
        let adcT = raw.temperature
        let t1 = Int32(c.t1), t2 = Int32(c.t2), t3 = Int32(c.t3)
        let v1 = (((adcT >> 3) &- (t1 << 1)) &* t2) >> 11
        let d = (adcT >> 4) &- t1
        let v2 = (((d &* d) >> 12) &* t3) >> 14
        let tFine = v1 &+ v2
        let temperature = (tFine &* 5 &+ 128) >> 8

        var var1 = Int64(tFine) - 128_000
        var var2 = var1 * var1 * Int64(c.p6)
        var2 = var2 + ((var1 * Int64(c.p5)) << 17)
        var2 = var2 + (Int64(c.p4) << 35)
        var1 = ((var1 * var1 * Int64(c.p3)) >> 8) + ((var1 * Int64(c.p2)) << 12)
        var1 = (((Int64(1) << 47) + var1) * Int64(c.p1)) >> 33
        guard var1 != 0 else { return nil }
        var p = Int64(1_048_576) - Int64(raw.pressure)
        p = (((p << 31) - var2) &* 3125) / var1
        var1 = (Int64(c.p9) &* (p >> 13) &* (p >> 13)) >> 25
        var2 = (Int64(c.p8) &* p) >> 19
        p = ((p &+ var1 &+ var2) >> 8) &+ (Int64(c.p7) << 4)
        guard p > 0, p <= Int64(UInt32.max) else { return nil }
        return Reading(temperatureCentidegrees: temperature, pressureQ24_8: UInt32(p), tFine: tFine)
    }
}
