import CI2CShim
import Glibc

/// Why the barometer could not be used.
public enum BarometerError: Error, Sendable, Hashable, CustomStringConvertible {
    case noSuchBus(path: String)
    case permissionDenied(path: String)
    /// Nothing answered at the address (wiring, address jumper, power).
    case noDevice(path: String, address: UInt8)
    /// Something answered, but its chip id is not a BMP280's or BME280's.
    case wrongChip(path: String, address: UInt8, chipID: UInt8)
    /// The calibration registers hold what no real part holds (all 0x00 or 0xFF, dig_P1 = 0).
    case badCalibration(path: String, address: UInt8)
    case io(call: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .noSuchBus(let p): "no I2C bus at \(p): enable I2C (dtparam=i2c_arm=on in /boot/firmware/config.txt) and reboot"
        case .permissionDenied(let p): "no permission to open \(p): run as a member of the i2c group"
        case .noDevice(let p, let a): "no barometer answers at 0x\(String(a, radix: 16)) on \(p): check the wiring, power and address (SDO to GND = 0x76, to 3V3 = 0x77)"
        case .wrongChip(let p, let a, let id): "the chip at 0x\(String(a, radix: 16)) on \(p) has id 0x\(String(id, radix: 16)), not a BMP280 (0x58) or BME280 (0x60); check [barometer] address"
        case .badCalibration(let p, let a): "the barometer at 0x\(String(a, radix: 16)) on \(p) has no valid calibration data (a damaged or counterfeit part)"
        case .io(let call, let e, let m): "\(call): \(m) (errno \(e))"
        }
    }
}

/// A Bosch BMP280 or BME280 on the I²C bus through libi2c: probes the chip id, reads the factory
/// calibration once, puts the sensor in normal mode with the configuration it is given, and
/// reads the six raw data registers on request (one 6-byte I²C block read, ≈ 0.2 ms at
/// 400 kHz: nothing waits for a conversion in normal mode). The compensation lives in the pure
/// `Positioning.BMP280`; this knows registers, not pascals.
public final class BarometerSensor {
    /// Registers (BST-BMP280-DS001 §4.3).
    public enum Register {
        public static let calibration: UInt8 = 0x88
        public static let chipID: UInt8 = 0xD0
        public static let controlMeasurement: UInt8 = 0xF4
        public static let config: UInt8 = 0xF5
        public static let data: UInt8 = 0xF7
    }
    public static let calibrationBytes = 24
    public static let dataBytes = 6
    /// BMP280 (0x58, samples 0x56/0x57) and BME280 (0x60).
    public static let acceptedChipIDs: [UInt8] = [0x56, 0x57, 0x58, 0x60]

    public let path: String
    public let address: UInt8
    public let chipID: UInt8
    /// The 24 calibration bytes from 0x88 (dig_T1 … dig_P9, little-endian).
    public let calibration: [UInt8]
    private let fd: Int32
    private let scratch: UnsafeMutablePointer<UInt8>

    /// Opens `path`, checks the chip at `address`, reads its calibration and writes
    /// `config` then `controlMeasurement` (sleep → configure → measure: the datasheet says a
    /// config write in normal mode may be ignored).
    public init(path: String, address: UInt8, controlMeasurement: UInt8, config: UInt8) throws(BarometerError) {
        self.path = path
        self.address = address
        let r = ci2c_open(path)
        guard r >= 0 else {
            switch -r {
            case ENOENT, ENODEV, ENXIO: throw .noSuchBus(path: path)
            case EACCES, EPERM: throw .permissionDenied(path: path)
            default: throw .io(call: "open(\(path))", errno: -r, message: Self.message(-r))
            }
        }
        let handle = r
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
        var ok = false
        defer { if !ok { ci2c_close(handle); buffer.deallocate() } }
        let a = ci2c_set_address(handle, Int32(address))
        guard a == 0 else { throw .io(call: "ioctl(I2C_SLAVE 0x\(String(address, radix: 16)))", errno: -a, message: Self.message(-a)) }
        let id = ci2c_read_register(handle, Register.chipID)
        guard id >= 0 else { throw Self.transferError(-id, path: path, address: address, call: "read chip id") }
        guard Self.acceptedChipIDs.contains(UInt8(id)) else { throw .wrongChip(path: path, address: address, chipID: UInt8(id)) }
        let n = ci2c_read_registers(handle, Register.calibration, buffer, UInt8(Self.calibrationBytes))
        guard n >= 0 else { throw Self.transferError(-n, path: path, address: address, call: "read calibration") }
        let cal = Array(UnsafeBufferPointer(start: buffer, count: Self.calibrationBytes))
        guard !cal.allSatisfy({ $0 == 0 }), !cal.allSatisfy({ $0 == 0xFF }),
              cal[6] != 0 || cal[7] != 0 else { throw .badCalibration(path: path, address: address) }
        for (reg, value) in [(Register.controlMeasurement, UInt8(0)), (Register.config, config), (Register.controlMeasurement, controlMeasurement)] {
            let w = ci2c_write_register(handle, reg, value)
            guard w == 0 else { throw Self.transferError(-w, path: path, address: address, call: "write register 0x\(String(reg, radix: 16))") }
        }
        fd = handle
        scratch = buffer
        chipID = UInt8(id)
        calibration = cal
        ok = true
    }

    deinit {
        ci2c_close(fd)
        scratch.deallocate()
    }

    /// Reads the six data registers (press_msb … temp_xlsb) into `out[0..<6]` (allocated by the
    /// caller once). Allocates nothing.
    public func readData(into out: inout [UInt8]) throws(BarometerError) {
        precondition(out.count >= Self.dataBytes)
        let n = ci2c_read_registers(fd, Register.data, scratch, UInt8(Self.dataBytes))
        guard n >= 0 else { throw Self.transferError(-n, path: path, address: address, call: "read data") }
        for i in 0..<Self.dataBytes { out[i] = scratch[i] }
    }

    /// Reads one register (tools and tests).
    public func readRegister(_ reg: UInt8) throws(BarometerError) -> UInt8 {
        let v = ci2c_read_register(fd, reg)
        guard v >= 0 else { throw Self.transferError(-v, path: path, address: address, call: "read register") }
        return UInt8(v)
    }

    /// A transfer nobody acknowledged (EREMOTEIO on a Pi, ENXIO, ENODEV from i2c-stub, EIO) is a
    /// missing device; anything else is an I/O error.
    static func transferError(_ e: Int32, path: String, address: UInt8, call: String) -> BarometerError {
        switch e {
        case ENXIO, EREMOTEIO, EIO, ENODEV: .noDevice(path: path, address: address)
        default: .io(call: call, errno: e, message: message(e))
        }
    }

    static func message(_ e: Int32) -> String { String(cString: strerror(e)) }
}
