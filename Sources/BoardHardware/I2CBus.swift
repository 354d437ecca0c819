import CI2CShim
import Display
import Glibc

/// The display's I²C bus through libi2c: /dev/i2c-N, `I2C_SLAVE` to the display's address, and
/// one SMBus "I2C block write" per transaction (the control byte as the SMBus command, then up
/// to 32 bytes).
///
/// Two ways to open it:
/// - `init(path:address:probe:)` opens now and probes the address with a no-op command, so a
///   missing or miswired display is reported at once (tools, tests);
/// - `init(deferredPath:address:)` opens nothing yet: the first `write` opens the bus, and a
///   write that fails closes it again so the next one reopens it (the adapter may have been
///   replaced). The
///   board uses this: a display plugged in (or a bus enabled) after boot is used as soon as it
///   answers, with no restart (DisplayScreen paces the retries).
public final class I2CBus: DisplayBus {
    public let path: String
    public let address: UInt8
    private var fd: Int32 = -1
    /// Times the bus node was opened (1 for a bus that never went away).
    public private(set) var opens = 0

    /// Opens /dev/i2c-`bus` for the device at `address` (0x3C or 0x3D for these displays).
    public convenience init(bus: Int, address: UInt8) throws(DisplayBusError) {
        try self.init(path: "/dev/i2c-\(bus)", address: address)
    }

    public init(path: String, address: UInt8, probe: Bool = true) throws(DisplayBusError) {
        self.path = path
        self.address = address
        try open()
        if probe {
            var nop: UInt8 = OLEDCommand.nop
            do {
                try withUnsafePointer(to: &nop) { p throws(DisplayBusError) in
                    try write(control: OLEDControl.commands, UnsafeBufferPointer(start: p, count: 1))
                }
            } catch {
                close()
                throw error
            }
        }
    }

    /// A bus opened at its first write (see the type's comment).
    public init(deferredPath path: String, address: UInt8) {
        self.path = path
        self.address = address
    }

    deinit { close() }

    public var isOpen: Bool { fd >= 0 }

    public func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        precondition(bytes.count >= 1 && bytes.count <= DisplayBusLimits.transactionBytesMax, "1...32 bytes per I2C block write")
        if fd < 0 { try open() }
        let r = ci2c_write_block(fd, control, bytes.baseAddress, UInt8(bytes.count))
        guard r == 0 else {
            close()  // reopened by the next write: also recovers from an adapter that was replaced
            throw Self.writeError(errno: -r, path: path, address: address)
        }
    }

    private func open() throws(DisplayBusError) {
        let r = ci2c_open(path)
        guard r >= 0 else { throw Self.openError(errno: -r, path: path) }
        let a = ci2c_set_address(r, Int32(address))
        guard a == 0 else {
            ci2c_close(r)
            throw DisplayBusError.io(call: "ioctl(I2C_SLAVE 0x\(String(address, radix: 16)))", errno: -a, message: Self.message(-a))
        }
        fd = r
        opens += 1
    }

    private func close() {
        if fd >= 0 { ci2c_close(fd) }
        fd = -1
    }

    /// Maps open(2) failures to what the user should do.
    static func openError(errno e: Int32, path: String) -> DisplayBusError {
        switch e {
        case ENOENT, ENODEV, ENXIO: .noSuchBus(path: path)
        case EACCES, EPERM: .permissionDenied(path: path)
        default: .io(call: "open(\(path))", errno: e, message: message(e))
        }
    }

    /// A write that nobody acknowledged: EREMOTEIO (a Raspberry Pi's i2c-bcm2835 on a NACK),
    /// ENXIO (i2c-designware, i2c-gpio), ENODEV (i2c-stub, for an address it does not
    /// simulate), EIO (older adapters). All give the same message: check the wiring and address.
    static func writeError(errno e: Int32, path: String, address: UInt8) -> DisplayBusError {
        switch e {
        case ENXIO, EREMOTEIO, EIO, ENODEV: .noDevice(path: path, address: address)
        default: .io(call: "i2c_smbus_write_i2c_block_data", errno: e, message: message(e))
        }
    }

    static func message(_ e: Int32) -> String { String(cString: strerror(e)) }
}
