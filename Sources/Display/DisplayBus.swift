/// An I²C link to a display controller: one call = one I²C write transaction of a control byte
/// followed by 1...`transactionBytesMax` bytes. The board implements it over libi2c
/// (BoardHardware.I2CBus); tests and the simulator use `SSD1306Emulator`. Every I²C bus is a
/// `DisplayLink`: commands go with control byte 0x00, display data with 0x40.
public protocol DisplayBus: DisplayLink {
    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError)
}

extension DisplayBus {
    public mutating func send(_ transfer: LinkTransfer, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        try write(control: transfer == .commands ? OLEDControl.commands : OLEDControl.data, bytes)
    }

    public var transactionBytesMax: Int { DisplayBusLimits.transactionBytesMax }
}

public enum DisplayBusLimits {
    /// Bytes after the control byte in one transaction: the SMBus I2C-block limit.
    public static let transactionBytesMax = 32
}

/// Why the display could not be reached. Each message says what to do.
public enum DisplayBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// /dev/i2c-N does not exist.
    case noSuchBus(path: String)
    /// Nothing acknowledged at the address.
    case noDevice(path: String, address: UInt8)
    /// The bus node exists but this user may not open it.
    case permissionDenied(path: String)
    /// Any other failure of the named call.
    case io(call: String, errno: Int32, message: String)
    /// /dev/spidevB.C does not exist (SPI not enabled, or another bus or chip select).
    case noSPIDevice(path: String)
    /// The spidev node exists but this user may not open it.
    case spiPermissionDenied(path: String)
    /// The SPI controller refused a setting the panel needs (mode, chip select polarity, clock).
    case spiUnsupported(path: String, setting: String)
    /// Any other failure of the named spidev call.
    case spiIO(path: String, call: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .noSuchBus(let path):
            "no I2C bus at \(path): enable I2C (add dtparam=i2c_arm=on to /boot/firmware/config.txt, or raspi-config > Interface Options > I2C), reboot, and check the bus number with `ls /dev/i2c-*`"
        case .noDevice(let path, let address):
            "no device acknowledged at address 0x\(hex(address)) on \(path): check the display's wiring (SDA, SCL, 3V3, GND) and its address (0x3C or 0x3D) with `i2cdetect -y 1`"
        case .permissionDenied(let path):
            "permission denied opening \(path): add the user to the i2c group (`sudo usermod -aG i2c $USER`, then log in again) or run as root"
        case .io(let call, let errno, let message):
            "I2C \(call) failed: \(message) (errno \(errno)); check the wiring and the bus speed"
        case .noSPIDevice(let path):
            "no SPI device at \(path): enable SPI (add dtparam=spi=on to /boot/firmware/config.txt, or raspi-config > Interface Options > SPI), reboot, and check [display] spi_bus and chip_select against `ls /dev/spidev*`"
        case .spiPermissionDenied(let path):
            "permission denied opening \(path): add the user to the spi group (`sudo usermod -aG spi $USER`, then log in again) or run as root"
        case .spiUnsupported(let path, let setting):
            "the SPI controller of \(path) refused \(setting); use the Pi's SPI0 (its chip selects are GPIO lines, which can be active high) or lower [display] spi_speed_hz"
        case .spiIO(let path, let call, let errno, let message):
            "SPI \(call) on \(path) failed: \(message) (errno \(errno)); check that the SPI overlay is loaded and the panel's wiring"
        }
    }

    private func hex(_ v: UInt8) -> String {
        let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
        return String([digits[Int(v >> 4)], digits[Int(v & 15)]])
    }
}

/// A bus that only counts (and optionally keeps) what would be sent; for measurements.
public struct CountingBus: DisplayBus, Sendable {
    public private(set) var transactions = 0
    public private(set) var payloadBytes = 0

    public init() {}

    public mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        transactions += 1
        payloadBytes += bytes.count
    }
}
