import CI2CShim
import Glibc

/// Why a register device on the I²C bus could not be used.
public enum I2CDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    case noSuchBus(path: String)
    case permissionDenied(path: String)
    /// Nothing acknowledged the address (wiring, address, power).
    case noDevice(path: String, address: UInt8)
    case io(call: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .noSuchBus(let p): "no I2C bus at \(p): enable I2C (dtparam=i2c_arm=on in /boot/firmware/config.txt) and reboot"
        case .permissionDenied(let p): "no permission to open \(p): run as a member of the i2c group"
        case .noDevice(let p, let a): "nothing answers at 0x\(String(a, radix: 16)) on \(p): check the wiring, power and address"
        case .io(let call, let e, let m): "\(call): \(m) (errno \(e))"
        }
    }
}

/// A chip with byte and 16-bit registers on the I²C bus, through libi2c's SMBus calls (the fuel
/// gauges of docs/power.md). It knows registers, not what they mean. Each call is one short
/// SMBus transaction (a word read: 5 bytes on the wire, ≈ 0.15 ms at 400 kHz), made on the run
/// loop; nothing waits for a conversion.
public final class I2CRegisterDevice {
    public let path: String
    public let address: UInt8
    private let fd: Int32

    public init(path: String, address: UInt8) throws(I2CDeviceError) {
        self.path = path
        self.address = address
        let r = ci2c_open(path)
        guard r >= 0 else {
            switch -r {
            case ENOENT, ENODEV, ENXIO: throw .noSuchBus(path: path)
            case EACCES, EPERM: throw .permissionDenied(path: path)
            default: throw .io(call: "open(\(path))", errno: -r, message: String(cString: strerror(-r)))
            }
        }
        let a = ci2c_set_address(r, Int32(address))
        guard a == 0 else {
            ci2c_close(r)
            throw .io(call: "ioctl(I2C_SLAVE 0x\(String(address, radix: 16)))", errno: -a, message: String(cString: strerror(-a)))
        }
        fd = r
    }

    deinit { ci2c_close(fd) }

    public func readByte(_ register: UInt8) throws(I2CDeviceError) -> UInt8 {
        let v = ci2c_read_register(fd, register)
        guard v >= 0 else { throw transferError(-v, "read register 0x\(String(register, radix: 16))") }
        return UInt8(truncatingIfNeeded: v)
    }

    /// A 16-bit register whose chip sends the most significant byte first (SMBus sends the low
    /// byte first: the bytes are swapped back).
    public func readWordBigEndian(_ register: UInt8) throws(I2CDeviceError) -> UInt16 {
        let v = ci2c_read_word(fd, register)
        guard v >= 0 else { throw transferError(-v, "read word 0x\(String(register, radix: 16))") }
        return UInt16(truncatingIfNeeded: v).byteSwapped
    }

    public func writeByte(_ register: UInt8, _ value: UInt8) throws(I2CDeviceError) {
        let w = ci2c_write_register(fd, register, value)
        guard w == 0 else { throw transferError(-w, "write register 0x\(String(register, radix: 16))") }
    }

    /// Nobody acknowledged (EREMOTEIO on a Pi, ENXIO, ENODEV from i2c-stub, EIO): a missing
    /// device; anything else an I/O error.
    func transferError(_ e: Int32, _ call: String) -> I2CDeviceError {
        switch e {
        case ENXIO, EREMOTEIO, EIO, ENODEV: .noDevice(path: path, address: address)
        default: .io(call: call, errno: e, message: String(cString: strerror(e)))
        }
    }
}
