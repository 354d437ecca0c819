/// SSD1306 / SH1106 OLED controllers: command bytes, panel geometries and the init sequence.
///
/// On I²C every transaction is: the device address, a control byte, then bytes. Control byte
/// 0x00 = the rest are commands (with their arguments), 0x40 = the rest are display data written
/// to memory at the current address. (Bit 7, "Co", set means only one byte follows before
/// another control byte; the driver never sets it, the emulator understands it.)
public enum OLEDController: Sendable, Hashable, CustomStringConvertible {
    /// SSD1306: 128 columns of memory, page/horizontal/vertical addressing.
    case ssd1306
    /// SH1106: 132 columns of memory of which the 1.3" 128-pixel glass shows columns 2...129;
    /// page addressing only.
    case sh1106

    /// Columns of display memory.
    public var memoryColumns: Int { self == .ssd1306 ? 128 : 132 }
    /// The memory column shown at the panel's leftmost pixel.
    public var columnOffset: Int { self == .ssd1306 ? 0 : 2 }

    public var description: String { self == .ssd1306 ? "SSD1306" : "SH1106" }
}

/// I²C control bytes.
public enum OLEDControl {
    public static let commands: UInt8 = 0x00
    public static let data: UInt8 = 0x40
    /// "Continuation" bit: set = one byte follows, then another control byte.
    public static let singleByteFlag: UInt8 = 0x80
}

/// Command bytes (SSD1306 datasheet rev 1.1 §9-10, SH1106 datasheet v2.3 §"Commands").
public enum OLEDCommand {
    public static let setLowerColumn: UInt8 = 0x00       // | low nibble (page mode)
    public static let setHigherColumn: UInt8 = 0x10      // | high nibble (page mode)
    public static let memoryAddressingMode: UInt8 = 0x20 // + 0 horizontal, 1 vertical, 2 page (SSD1306)
    public static let columnAddress: UInt8 = 0x21        // + start, end (horizontal/vertical modes)
    public static let pageAddress: UInt8 = 0x22          // + start, end (horizontal/vertical modes)
    public static let deactivateScroll: UInt8 = 0x2E
    public static let activateScroll: UInt8 = 0x2F
    public static let startLine: UInt8 = 0x40            // | line 0...63
    public static let contrast: UInt8 = 0x81             // + level 0...255
    public static let chargePump: UInt8 = 0x8D           // + 0x14 on / 0x10 off (SSD1306)
    public static let segmentRemapOff: UInt8 = 0xA0      // column 0 -> SEG0
    public static let segmentRemapOn: UInt8 = 0xA1       // column 127 -> SEG0
    public static let resumeFromRAM: UInt8 = 0xA4        // show memory
    public static let entireDisplayOn: UInt8 = 0xA5      // all pixels on, memory ignored
    public static let normalDisplay: UInt8 = 0xA6
    public static let inverseDisplay: UInt8 = 0xA7
    public static let multiplexRatio: UInt8 = 0xA8       // + rows - 1
    public static let sh1106DCDC: UInt8 = 0xAD           // + 0x8B on (SH1106 charge pump)
    public static let displayOff: UInt8 = 0xAE
    public static let displayOn: UInt8 = 0xAF
    public static let pageStart: UInt8 = 0xB0            // | page 0...7 (page mode)
    public static let comScanNormal: UInt8 = 0xC0
    public static let comScanRemapped: UInt8 = 0xC8
    public static let displayOffset: UInt8 = 0xD3        // + vertical shift
    public static let clockDivide: UInt8 = 0xD5          // + divide ratio / oscillator frequency
    public static let precharge: UInt8 = 0xD9            // + phase 1 / phase 2 periods
    public static let comPins: UInt8 = 0xDA              // + COM pin hardware configuration
    public static let vcomDeselect: UInt8 = 0xDB         // + VCOMH level
    public static let nop: UInt8 = 0xE3
}

/// A panel: its controller, size and I²C address.
public struct PanelConfiguration: Sendable, Hashable {
    public var controller: OLEDController
    public var width: Int
    public var height: Int
    /// 0x3C (SA0 low, the usual) or 0x3D.
    public var address: UInt8
    /// Contrast while riding and while idle (dimmed).
    public var contrastActive: UInt8
    public var contrastIdle: UInt8

    public init(controller: OLEDController = .ssd1306, width: Int = 128, height: Int = 64, address: UInt8 = 0x3C,
                contrastActive: UInt8 = 0xCF, contrastIdle: UInt8 = 0x10) {
        precondition(width == 128 && (height == 64 || height == 32), "panels are 128x64 or 128x32")
        precondition(address == 0x3C || address == 0x3D, "SSD1306/SH1106 answer at 0x3C or 0x3D")
        self.controller = controller
        self.width = width
        self.height = height
        self.address = address
        self.contrastActive = contrastActive
        self.contrastIdle = contrastIdle
    }

    public var pageCount: Int { height / 8 }

    /// The init sequence, one row per command with its arguments. Sent once at start-up with the
    /// display off; the memory is then written in full before the display is switched on.
    public var initSequence: [[UInt8]] {
        let tall = height == 64
        var table: [[UInt8]] = [
            [OLEDCommand.displayOff],                        // panel dark while memory is garbage
            [OLEDCommand.clockDivide, 0x80],                 // divide ratio 1, oscillator ~370 kHz (reset value)
            [OLEDCommand.multiplexRatio, UInt8(height - 1)], // 64 or 32 rows driven
            [OLEDCommand.displayOffset, 0x00],               // no vertical shift
            [OLEDCommand.startLine | 0],                     // memory row 0 at the top
        ]
        switch controller {
        case .ssd1306:
            table += [
                [OLEDCommand.chargePump, 0x14],              // internal charge pump on (no external VCC)
                [OLEDCommand.memoryAddressingMode, 0x00],    // horizontal: the driver sends column windows
                [OLEDCommand.deactivateScroll],              // no hardware scrolling
            ]
        case .sh1106:
            table += [
                [OLEDCommand.sh1106DCDC, 0x8B],              // built-in DC-DC on (page addressing is its only mode)
            ]
        }
        table += [
            [OLEDCommand.segmentRemapOn],                    // column 127 -> SEG0: modules mount the glass this way
            [OLEDCommand.comScanRemapped],                   // scan COM[N-1] -> COM0: upright with the remap above
            [OLEDCommand.comPins, tall ? 0x12 : 0x02],       // alternative COM pins for 64 rows, sequential for 32
            [OLEDCommand.contrast, contrastActive],          // brightness
            [OLEDCommand.precharge, 0xF1],                   // phase 1 = 1 clock, phase 2 = 15 clocks (internal VCC)
            [OLEDCommand.vcomDeselect, 0x40],                // VCOMH ~0.89 x VCC
            [OLEDCommand.resumeFromRAM],                     // show memory, not all-on
            [OLEDCommand.normalDisplay],                     // 1 = lit pixel
        ]
        return table
    }
}
