import CI2CShim
import Display
import Glibc

/// The display's I²C bus through libi2c: /dev/i2c-N, `I2C_SLAVE` to the display's address, and
/// one SMBus "I2C block write" per transaction (the control byte as the SMBus command, then up
/// to 32 bytes). Opening probes the address with a no-op command so a missing or miswired
/// display is reported at start-up, not at the first frame.
public final class I2CBus: DisplayBus {
    public let path: String
    public let address: UInt8
    private var fd: Int32

    /// Opens /dev/i2c-`bus` for the device at `address` (0x3C or 0x3D for these displays).
    public convenience init(bus: Int, address: UInt8) throws(DisplayBusError) {
        try self.init(path: "/dev/i2c-\(bus)", address: address)
    }

    public init(path: String, address: UInt8, probe: Bool = true) throws(DisplayBusError) {
        self.path = path
        self.address = address
        let r = ci2c_open(path)
        guard r >= 0 else { throw Self.openError(errno: -r, path: path) }
        fd = r
        let a = ci2c_set_address(fd, Int32(address))
        guard a == 0 else {
            ci2c_close(fd)
            throw DisplayBusError.io(call: "ioctl(I2C_SLAVE 0x\(String(address, radix: 16)))", errno: -a, message: Self.message(-a))
        }
        if probe {
            var nop: UInt8 = OLEDCommand.nop
            do {
                try withUnsafePointer(to: &nop) { p throws(DisplayBusError) in
                    try write(control: OLEDControl.commands, UnsafeBufferPointer(start: p, count: 1))
                }
            } catch {
                ci2c_close(fd)
                throw error
            }
        }
    }

    deinit { ci2c_close(fd) }

    public func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        precondition(bytes.count >= 1 && bytes.count <= DisplayBusLimits.transactionBytesMax, "1...32 bytes per I2C block write")
        let r = ci2c_write_block(fd, control, bytes.baseAddress, UInt8(bytes.count))
        guard r == 0 else { throw Self.writeError(errno: -r, path: path, address: address) }
    }

    /// Maps open(2) failures to what the user should do.
    static func openError(errno e: Int32, path: String) -> DisplayBusError {
        switch e {
        case ENOENT, ENODEV, ENXIO: .noSuchBus(path: path)
        case EACCES, EPERM: .permissionDenied(path: path)
        default: .io(call: "open(\(path))", errno: e, message: message(e))
        }
    }

    /// A write that nobody acknowledged fails with ENXIO or EREMOTEIO (bcm2835) or EIO.
    static func writeError(errno e: Int32, path: String, address: UInt8) -> DisplayBusError {
        switch e {
        case ENXIO, EREMOTEIO, EIO: .noDevice(path: path, address: address)
        default: .io(call: "i2c_smbus_write_i2c_block_data", errno: e, message: message(e))
        }
    }

    static func message(_ e: Int32) -> String { String(cString: strerror(e)) }
}
