/// A Sharp memory LCD as its SPI wire sees it (the byte stream `SharpMemoryDriver` sends over an
/// MSB-first link, one transaction per chip-select window): what the panel's memory holds, the
/// VCOM polarity it was last given and counters. The simulator's large panel and the VM tests'
/// reference (the project's memlcd-sim kernel module implements the same reading in C and the
/// VM compares them); the tests keep a third, independent reading (PanelSeamTests).
///
/// The wire (Sharp's "Programming Memory LCDs" application note), each byte in time order as an
/// MSB-first link sends it: a mode byte whose top bits are M0 (write lines), M1 (VCOM) and M2
/// (clear all); for a write, per line its 1-based address (bits reversed: the panel reads the
/// address least significant bit first), `width / 8` bytes of pixels leftmost first (1 = white),
/// 8 trailer bits; then 8 more trailer bits. A clear or a VCOM-only command is the mode byte and
/// 8 trailer bits.
public struct SharpMemoryEmulator: DisplayLink, Sendable {
    public let width: Int
    public let height: Int
    public let transactionBytesMax: Int
    /// Per line `width / 8` bytes, leftmost pixel in the top bit, 1 = white (as on the wire).
    public private(set) var memory: [UInt8]
    /// The VCOM polarity of the last command (M1).
    public private(set) var vcom = false
    public private(set) var vcomChanges = 0
    public private(set) var transactions = 0
    public private(set) var bytesReceived = 0
    public private(set) var linesWritten = 0
    public private(set) var clears = 0
    /// Transactions that did not parse (a truncated line, an address out of range, a D/C
    /// transfer that the panel has no line for); what parsed before the fault is kept.
    public private(set) var malformed = 0

    public init(width: Int, height: Int, transactionBytesMax: Int = 4_096) {
        precondition(width % 8 == 0 && height <= 255, "a memory LCD line is whole bytes, addresses 8 bits")
        self.width = width
        self.height = height
        self.transactionBytesMax = transactionBytesMax
        memory = Array(repeating: 0xFF, count: width / 8 * height)
    }

    public init(model: SharpMemoryDriver.Model) { self.init(width: model.width, height: model.height) }

    var bytesPerLine: Int { width / 8 }

    public mutating func send(_ transfer: LinkTransfer, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        transactions += 1
        bytesReceived += bytes.count
        guard transfer == .data, bytes.count >= 2 else { malformed += 1; return }
        let mode = bytes[0]
        let v = mode & SharpMemoryDriver.Command.vcomHigh != 0
        if v != vcom { vcomChanges += 1 }
        vcom = v
        if mode & SharpMemoryDriver.Command.clearAll != 0 {
            for i in memory.indices { memory[i] = 0xFF }
            clears += 1
            return
        }
        guard mode & SharpMemoryDriver.Command.writeLines != 0 else { return }
        let perLine = bytesPerLine + 2
        var i = 1
        while i + perLine <= bytes.count - 1 {
            let address = Int(Self.reversed(bytes[i]))
            guard address >= 1 && address <= height else { malformed += 1; return }
            let base = (address - 1) * bytesPerLine
            for k in 0..<bytesPerLine { memory[base + k] = bytes[i + 1 + k] }
            linesWritten += 1
            i += perLine
        }
        if i != bytes.count - 1 { malformed += 1 }
    }

    /// The panel lost its supply: the memory holds whatever the cells drift to (here: a
    /// checkerboard, so a test sees it is not the frame).
    public mutating func powerLoss() {
        for line in 0..<height {
            for k in 0..<bytesPerLine { memory[line * bytesPerLine + k] = line % 2 == 0 ? 0xAA : 0x55 }
        }
    }

    /// Whether the pixel at (x, y) is dark.
    public func isDark(x: Int, y: Int) -> Bool { memory[y * bytesPerLine + x / 8] & (0x80 >> UInt8(x % 8)) == 0 }

    /// What the rider sees: a dark pixel is a drawn one.
    public func panelImage() -> Framebuffer {
        var fb = Framebuffer(width: width, height: height)
        for y in 0..<height { for x in 0..<width where isDark(x: x, y: y) { fb.setPixel(x: x, y: y) } }
        return fb
    }

    static func reversed(_ b: UInt8) -> UInt8 {
        var v = b, r: UInt8 = 0
        for _ in 0..<8 { r = r << 1 | v & 1; v >>= 1 }
        return r
    }
}

/// The emulator as the SPI device behind an `SPIDisplayLink` (the board's wiring with spidev).
extension SharpMemoryEmulator: SPIWriter {
    public mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) { try send(.data, bytes) }
}
