import CSPIShim
import Display
import Glibc

/// An SPI panel's device through spidev: /dev/spidevB.C opened read-write, its mode, word size
/// and clock set (and read back), then one `SPI_IOC_MESSAGE` per transaction: chip select
/// asserted for exactly the transaction's bytes, held `csHoldUs` after the last bit (a Sharp
/// memory LCD wants its SCS high a few µs past the trailer). Each write is one bounded ioctl
/// (the driver keeps a transaction to a few milliseconds of wire time), as the I²C path's
/// block writes are.
///
/// Like `I2CBus(deferredPath:address:)` it opens nothing at first: the first write opens and
/// configures the device, and a write that fails closes it so the next one opens it again (an
/// overlay loaded late, a device that was unbound and bound again). `PanelScreen` paces those
/// retries; a missing device at boot is reported and retried, never fatal.
public final class SPIDevice: SPIWriter {
    /// SPI mode: clock polarity and phase (the Sharp LCDs take data on the rising edge, mode 0).
    public struct Mode: Sendable, Hashable {
        public var cpol = false
        public var cpha = false
        /// Chip select asserted high (a Sharp memory LCD's SCS); low on most SPI devices.
        public var chipSelectActiveHigh = false
        public init(cpol: Bool = false, cpha: Bool = false, chipSelectActiveHigh: Bool = false) {
            self.cpol = cpol
            self.cpha = cpha
            self.chipSelectActiveHigh = chipSelectActiveHigh
        }
        var bits: UInt32 {
            (cpha ? cspi_mode_cpha() : 0) | (cpol ? cspi_mode_cpol() : 0) | (chipSelectActiveHigh ? cspi_mode_cs_high() : 0)
        }
        /// A Sharp memory LCD: mode 0, chip select active high.
        public static let sharpMemoryLCD = Mode(chipSelectActiveHigh: true)
    }

    public let path: String
    public let mode: Mode
    public let speedHz: Int
    public let csHoldUs: Int
    private var fd: Int32 = -1
    /// Times the device node was opened (1 for a device that never went away).
    public private(set) var opens = 0
    public private(set) var transactions = 0
    public private(set) var bytesWritten = 0

    /// /dev/spidev`bus`.`chipSelect`.
    public static func path(bus: Int, chipSelect: Int) -> String { "/dev/spidev\(bus).\(chipSelect)" }

    public init(deferredPath path: String, mode: Mode, speedHz: Int, csHoldUs: Int = 2) {
        precondition(speedHz > 0 && csHoldUs >= 0 && csHoldUs <= 1_000)
        self.path = path
        self.mode = mode
        self.speedHz = speedHz
        self.csHoldUs = csHoldUs
    }

    /// Opens and configures now (tools, tests).
    public convenience init(path: String, mode: Mode, speedHz: Int, csHoldUs: Int = 2) throws(DisplayBusError) {
        self.init(deferredPath: path, mode: mode, speedHz: speedHz, csHoldUs: csHoldUs)
        try open()
    }

    deinit { close() }

    public var isOpen: Bool { fd >= 0 }

    public func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        precondition(bytes.count >= 1, "an SPI transaction carries at least one byte")
        if fd < 0 { try open() }
        let r = cspi_write(fd, bytes.baseAddress, UInt32(bytes.count), UInt32(speedHz), UInt16(csHoldUs))
        guard r == 0 else {
            close()  // reopened by the next write: the device may have been unbound and bound again
            throw Self.writeError(errno: -r, path: path)
        }
        transactions += 1
        bytesWritten += bytes.count
    }

    private func open() throws(DisplayBusError) {
        let r = cspi_open(path)
        guard r >= 0 else { throw Self.openError(errno: -r, path: path) }
        let c = cspi_configure(r, mode.bits, UInt32(speedHz))
        guard c == 0 else {
            cspi_close(r)
            if -c == EINVAL {
                throw DisplayBusError.spiUnsupported(path: path, setting: "mode \(mode.cpol ? 1 : 0)\(mode.cpha ? 1 : 0)\(mode.chipSelectActiveHigh ? " with chip select active high" : "") at \(speedHz) Hz")
            }
            throw Self.writeError(errno: -c, path: path)
        }
        fd = r
        opens += 1
    }

    private func close() {
        if fd >= 0 { cspi_close(fd) }
        fd = -1
    }

    static func openError(errno e: Int32, path: String) -> DisplayBusError {
        switch e {
        case ENOENT, ENODEV, ENXIO: .noSPIDevice(path: path)
        case EACCES, EPERM: .spiPermissionDenied(path: path)
        default: .spiIO(path: path, call: "open", errno: e, message: message(e))
        }
    }

    /// ESHUTDOWN: the device was unbound under an open descriptor (spidev's answer then).
    static func writeError(errno e: Int32, path: String) -> DisplayBusError {
        switch e {
        case ENODEV, ESHUTDOWN, ENXIO: .noSPIDevice(path: path)
        default: .spiIO(path: path, call: "ioctl(SPI_IOC_MESSAGE)", errno: e, message: message(e))
        }
    }

    static func message(_ e: Int32) -> String { String(cString: strerror(e)) }
}
