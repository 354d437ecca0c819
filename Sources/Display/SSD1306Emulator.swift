/// A software SSD1306 / SH1106: interprets the exact I²C byte stream (control bytes, commands
/// with their arguments, display data) into display memory, and renders the panel as the rider
/// sees it. Tests and the simulator use it in place of a screen.
///
/// Behaviour modelled (SSD1306 datasheet rev 1.1 §10.1.3-10.1.5, SH1106 v2.3):
/// - Page addressing (SSD1306 reset default; SH1106's only mode): B0-B7 picks the page, 00-0F /
///   10-1F the low / high nibble of the column. Each data byte writes the column byte and
///   advances the column; on the SSD1306 past column 127 it wraps to column 0 of the same page;
///   on the SH1106 it stops at column 131 (further bytes are dropped and counted).
/// - Horizontal addressing (20 00): 21 start end / 22 start end set the window and move the
///   pointer to its start. After each byte the column advances; past the window's end column it
///   returns to the start column and the page advances; past the end page it returns to the
///   start page.
/// - Vertical addressing (20 01): the page advances first; past the end page it returns to the
///   start page and the column advances; past the end column it returns to the start column.
/// - Segment remap (A0/A1), COM scan direction (C0/C8), start line (40-7F), display offset (D3),
///   inverse (A6/A7), entire display on (A4/A5), display on/off (AE/AF), contrast (81).
/// - The panel's supply: the SSD1306's charge pump (8D 14 on, 8D 10 off; off after reset) and the
///   SH1106's DC-DC (AD 8B on, AD 8A off; on after reset). The glass lights only with the display
///   on AND its supply on: a module without external VCC stays dark until 8D 14.
/// - Power-on reset (`powerOnReset()`, a brown-out or a connector glitch): every register back to
///   its reset value (display off, supply as above, page addressing, full windows, contrast 7F, no
///   remap, normal COM scan, start line and offset 0, 64 rows) and GDDRAM cleared.
/// The panel is taken to be mounted as on common modules: A1 + C8 shows memory upright.
///
/// The project's kernel module (Tests/vm/ssd1306-sim) implements the same model; the VM tests
/// feed both the same byte streams and compare GDDRAM and state, so neither drifts unseen.
public struct SSD1306Emulator: DisplayBus, Sendable {
    public enum AddressingMode: UInt8, Sendable { case horizontal = 0, vertical = 1, page = 2 }

    public let controller: OLEDController
    public let height: Int
    public let pageCount: Int
    /// Display memory: `pageCount` pages of `controller.memoryColumns` column bytes.
    public private(set) var memory: [UInt8]

    public private(set) var addressingMode: AddressingMode = .page
    public private(set) var columnStart = 0
    public private(set) var columnEnd = 127
    public private(set) var pageStart = 0
    public private(set) var pageEnd: Int
    public private(set) var column = 0
    public private(set) var page = 0

    public private(set) var displayOn = false
    /// The SSD1306's charge pump or the SH1106's DC-DC converter.
    public private(set) var chargePumpOn: Bool
    public private(set) var contrast: UInt8 = 0x7F
    public private(set) var inverse = false
    public private(set) var entireDisplayOn = false
    public private(set) var segmentRemap = false
    public private(set) var comScanRemapped = false
    public private(set) var startLine = 0
    public private(set) var displayOffset = 0
    public private(set) var multiplexRows: Int

    // Counters.
    public private(set) var transactions = 0
    public private(set) var bytesReceived = 0
    public private(set) var dataBytesWritten = 0
    public private(set) var commandsExecuted = 0
    public private(set) var unknownCommands = 0
    public private(set) var droppedDataBytes = 0
    /// Power-on resets (`powerOnReset()`).
    public private(set) var resets = 0

    // Command parser: an opcode waiting for `argumentsNeeded` more argument bytes.
    private var opcode: UInt8 = 0
    private var arguments: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0)
    private var argumentCount = 0
    private var argumentsNeeded = 0

    public init(controller: OLEDController = .ssd1306, height: Int = 64) {
        precondition(height == 64 || height == 32)
        self.controller = controller
        self.height = height
        pageCount = 8  // the controller always has 8 pages of memory; a 32-row panel shows 4
        pageEnd = 7
        multiplexRows = 64
        chargePumpOn = controller == .sh1106
        memory = Array(repeating: 0, count: 8 * controller.memoryColumns)
    }

    /// The controller loses power and comes back: display off, charge pump off (SSD1306; the
    /// SH1106's DC-DC is on after reset), every register at its reset value, GDDRAM cleared, a
    /// half-received command forgotten. Counters other than `resets` keep counting.
    public mutating func powerOnReset() {
        for i in memory.indices { memory[i] = 0 }
        addressingMode = .page
        columnStart = 0
        columnEnd = 127
        pageStart = 0
        pageEnd = 7
        column = 0
        page = 0
        displayOn = false
        chargePumpOn = controller == .sh1106
        contrast = 0x7F
        inverse = false
        entireDisplayOn = false
        segmentRemap = false
        comScanRemapped = false
        startLine = 0
        displayOffset = 0
        multiplexRows = 64
        opcode = 0
        argumentCount = 0
        argumentsNeeded = 0
        resets += 1
    }

    /// Whether the glass shows anything: display on and its supply on.
    public var isLit: Bool { displayOn && chargePumpOn }

    // MARK: Bus

    public mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        transactions += 1
        bytesReceived += 1 + bytes.count
        var isData = control & OLEDControl.data != 0
        var singleByte = control & OLEDControl.singleByteFlag != 0
        var expectControl = false
        for b in bytes {
            if expectControl {
                isData = b & OLEDControl.data != 0
                singleByte = b & OLEDControl.singleByteFlag != 0
                expectControl = false
                continue
            }
            if isData { writeData(b) } else { command(b) }
            if singleByte { expectControl = true }
        }
    }

    /// Feeds a command stream directly (as if sent with control byte 0x00).
    public mutating func commands(_ bytes: [UInt8]) {
        for b in bytes { command(b) }
    }

    /// Feeds display data directly (as if sent with control byte 0x40).
    public mutating func data(_ bytes: [UInt8]) {
        for b in bytes { writeData(b) }
    }

    // MARK: Data

    private var lastColumn: Int { controller.memoryColumns - 1 }

    private mutating func writeData(_ b: UInt8) {
        guard column >= 0, column <= lastColumn, page < pageCount else {
            droppedDataBytes += 1
            return
        }
        memory[page * controller.memoryColumns + column] = b
        dataBytesWritten += 1
        switch addressingMode {
        case .page:
            if controller == .ssd1306 {
                column = column >= 127 ? 0 : column + 1
            } else {
                column += 1  // SH1106: stops past 131; later bytes are dropped
            }
        case .horizontal:
            if column >= columnEnd {
                column = columnStart
                page = page >= pageEnd ? pageStart : page + 1
            } else {
                column += 1
            }
        case .vertical:
            if page >= pageEnd {
                page = pageStart
                column = column >= columnEnd ? columnStart : column + 1
            } else {
                page += 1
            }
        }
    }

    // MARK: Commands

    private func argumentsFor(_ op: UInt8) -> Int? {
        switch (controller, op) {
        case (_, 0x81), (_, 0xA8), (_, 0xD3), (_, 0xD5), (_, 0xD9), (_, 0xDA), (_, 0xDB): 1
        case (.ssd1306, 0x20), (.ssd1306, 0x8D): 1
        case (.ssd1306, 0x21), (.ssd1306, 0x22), (.ssd1306, 0xA3): 2
        case (.ssd1306, 0x26), (.ssd1306, 0x27): 6
        case (.ssd1306, 0x29), (.ssd1306, 0x2A): 5
        case (.sh1106, 0xAD): 1
        default: nil
        }
    }

    private mutating func command(_ b: UInt8) {
        if argumentsNeeded > 0 {
            switch argumentCount {
            case 0: arguments.0 = b
            case 1: arguments.1 = b
            case 2: arguments.2 = b
            case 3: arguments.3 = b
            case 4: arguments.4 = b
            default: arguments.5 = b
            }
            argumentCount += 1
            argumentsNeeded -= 1
            if argumentsNeeded == 0 { execute(opcode) }
            return
        }
        if let n = argumentsFor(b) {
            opcode = b
            argumentCount = 0
            argumentsNeeded = n
            return
        }
        execute(b)
    }

    private mutating func execute(_ op: UInt8) {
        let sh1106Lacks = (0x20...0x2F).contains(op) || op == 0x8D || op == 0xA3
        let ssd1306Lacks = op == 0xAD || (0x30...0x33).contains(op)
        if controller == .sh1106 ? sh1106Lacks : ssd1306Lacks {
            unknownCommands += 1
            return
        }
        commandsExecuted += 1
        let a0 = Int(arguments.0), a1 = Int(arguments.1)
        switch op {
        case 0x00...0x0F:
            if pageModeCommandsApply { column = (column & 0xF0) | Int(op & 0x0F) }
        case 0x10...0x1F:
            if pageModeCommandsApply { column = (column & 0x0F) | (Int(op & 0x0F) << 4) }
        case 0xB0...0xB7:
            if pageModeCommandsApply { page = Int(op & 0x07) }
        case 0x20:
            addressingMode = AddressingMode(rawValue: arguments.0 & 0x03) ?? .page
        case 0x21:
            columnStart = a0 & 0x7F
            columnEnd = a1 & 0x7F
            column = columnStart
        case 0x22:
            pageStart = a0 & 0x07
            pageEnd = a1 & 0x07
            page = pageStart
        case 0x40...0x7F: startLine = Int(op & 0x3F)
        case 0x81: contrast = arguments.0
        case 0xA0: segmentRemap = false
        case 0xA1: segmentRemap = true
        case 0xA4: entireDisplayOn = false
        case 0xA5: entireDisplayOn = true
        case 0xA6: inverse = false
        case 0xA7: inverse = true
        case 0xA8: multiplexRows = min(64, max(16, a0 & 0x3F + 1))
        case 0xAE: displayOn = false
        case 0xAF: displayOn = true
        case 0xC0: comScanRemapped = false
        case 0xC8: comScanRemapped = true
        case 0xD3: displayOffset = a0 & 0x3F
        case 0x8D: chargePumpOn = arguments.0 & 0x04 != 0  // 14 on, 10 off
        case 0xAD: chargePumpOn = arguments.0 & 0x01 != 0  // 8B on, 8A off
        case 0xD5, 0xD9, 0xDA, 0xDB, 0xE3, 0x2E, 0x2F, 0x26, 0x27, 0x29, 0x2A, 0xA3:
            break  // electrical settings and scrolling: accepted, no effect on the image
        case 0x30...0x33:
            break  // SH1106 pump voltage
        default:
            commandsExecuted -= 1
            unknownCommands += 1
        }
    }

    /// SSD1306 page-mode pointer commands act only in page addressing mode; the SH1106 has no
    /// other mode.
    private var pageModeCommandsApply: Bool { controller == .sh1106 || addressingMode == .page }

    // MARK: Reading back

    /// The memory byte at `column` of `page` (memory coordinates, not panel ones).
    public func memoryByte(page: Int, column: Int) -> UInt8 { memory[page * controller.memoryColumns + column] }

    /// The panel as the rider sees it (128 wide, `height` tall), in framebuffer layout: dark
    /// unless the display and its supply are on.
    public func panelImage() -> Framebuffer {
        var image = Framebuffer(width: 128, height: height)
        guard isLit else { return image }
        for y in 0..<height {
            let line = comScanRemapped ? y : multiplexRows - 1 - y
            let row = (line + startLine + displayOffset) & 63
            for x in 0..<128 {
                let col: Int = switch controller {
                case .ssd1306: segmentRemap ? x : 127 - x
                case .sh1106: segmentRemap ? x + 2 : 129 - x
                }
                var on = memory[(row >> 3) * controller.memoryColumns + col] & (1 << UInt8(row & 7)) != 0
                if entireDisplayOn { on = true }
                if inverse { on.toggle() }
                if on { image.setPixel(x: x, y: y) }
            }
        }
        return image
    }
}
