/// How bytes reach a panel's controller, whatever the wire: commands or display data, in
/// transactions of at most `transactionBytesMax` bytes. A panel driver (`PanelDriver`) talks
/// only to this, so the same driver runs over I²C (`DisplayBus`: a control byte says which) or
/// SPI (`SPIDisplayLink`: a D/C line says which), and a new wire is one type here.
public protocol DisplayLink {
    /// Sends `bytes` (1...`transactionBytesMax`) as one transaction of commands or of data.
    mutating func send(_ transfer: LinkTransfer, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError)
    /// The most bytes one transaction carries (32 on SMBus I²C, the spidev buffer on SPI).
    var transactionBytesMax: Int { get }
}

/// What a transaction carries.
public enum LinkTransfer: Sendable, Hashable {
    /// Controller commands and their arguments (I²C control byte 0x00, SPI D/C low).
    case commands
    /// Display memory data (I²C control byte 0x40, SPI D/C high).
    case data
}

/// An SPI device as a display link needs it: one write per transaction, chip select asserted
/// for its length (spidev on the board; a recorder in tests).
public protocol SPIWriter {
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError)
}

/// The data/command line of a 4-wire SPI display (a GPIO output): low for commands, high for data.
public protocol DataCommandLine {
    mutating func set(data: Bool) throws(DisplayBusError)
}

/// For SPI panels without a D/C line (a Sharp memory LCD: its commands travel in the data).
public struct NoDataCommandLine: DataCommandLine, Sendable {
    public init() {}
    public mutating func set(data: Bool) throws(DisplayBusError) {}
}

/// A display on SPI: the D/C line is set for each transaction (only when it changes), then the
/// bytes are written with chip select asserted. Transactions up to `transactionBytesMax` (the
/// kernel's spidev buffer is 4096 bytes by default).
public struct SPIDisplayLink<Port: SPIWriter, DC: DataCommandLine>: DisplayLink {
    public static var spidevBufferBytes: Int { 4_096 }

    public var port: Port
    public var dataCommand: DC
    public let transactionBytesMax: Int
    /// The D/C level last set (nil: unknown, set before the first transaction).
    var dcIsData: Bool?

    public init(port: Port, dataCommand: DC, transactionBytesMax: Int = SPIDisplayLink.spidevBufferBytes) {
        precondition(transactionBytesMax > 0)
        self.port = port
        self.dataCommand = dataCommand
        self.transactionBytesMax = transactionBytesMax
    }

    public mutating func send(_ transfer: LinkTransfer, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        let data = transfer == .data
        if dcIsData != data {
            dcIsData = nil  // unknown until the line is set
            try dataCommand.set(data: data)
            dcIsData = data
        }
        try port.write(bytes)
    }
}

extension SPIDisplayLink where DC == NoDataCommandLine {
    public init(port: Port, transactionBytesMax: Int = SPIDisplayLink.spidevBufferBytes) {
        self.init(port: port, dataCommand: NoDataCommandLine(), transactionBytesMax: transactionBytesMax)
    }
}
