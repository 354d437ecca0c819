import AppCore
import Display
import Screens
import Testing

/// An SPI device that records each transaction with the D/C level it went with.
struct RecordingSPI: SPIWriter {
    var transactions: [[UInt8]] = []
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) { transactions.append(Array(bytes)) }
}

/// A D/C line that records its level changes, shared with the recording SPI device through a box.
final class DCLevel: DataCommandLine {
    var data: Bool?
    var changes = 0
    func set(data: Bool) throws(DisplayBusError) { self.data = data; changes += 1 }
}

/// An SSD1306 on 4-wire SPI: what goes out with D/C low is commands, with D/C high data; the
/// emulator takes them as the I²C control byte would say.
struct SPIToEmulator: SPIWriter {
    var emulator = SSD1306Emulator()
    let dc: DCLevel
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        try emulator.write(control: dc.data == true ? OLEDControl.data : OLEDControl.commands, bytes)
    }
}

/// The display seam: one panel-driver protocol over any link, the SSD1306/SH1106 driver on I²C
/// and SPI, a Sharp memory LCD on SPI, and a framebuffer that is not bound to 128×64.
struct PanelSeamTests {
    static func runningModel(_ seconds: Int64) -> ScreenModel {
        var m = ScreenModel()
        m.mode = .running(page: 0)
        m.timerMs = seconds * 1000
        m[.speed] = 8.3
        m[.distance] = 12_345
        return m
    }

    /// The same driver draws the same picture whether its bytes go over I²C or SPI.
    @Test func ssd1306DriverIsTheSameOverI2CAndSPI() throws {
        var i2c = SSD1306Emulator()
        var overI2C = DisplayPipeline(panel: PanelConfiguration())
        try overI2C.start(bus: &i2c)
        let dc = DCLevel()
        var spi = SPIDisplayLink(port: SPIToEmulator(dc: dc), dataCommand: dc)
        var overSPI = DisplayPipeline(panel: PanelConfiguration())
        try overSPI.start(bus: &spi)
        for s in [Int64(1), 2, 61, 3_601] {
            overI2C.show(Self.runningModel(s))
            overSPI.show(Self.runningModel(s))
            try overI2C.flushAll(bus: &i2c)
            try overSPI.flushAll(bus: &spi)
            #expect(spi.port.emulator.memory == i2c.memory, "the controllers' memories agree at \(s) s")
        }
        #expect(spi.port.emulator.isLit && i2c.isLit)
        #expect(spi.port.emulator.memory.contains { $0 != 0 }, "something was drawn")
        // D/C is only set when it changes (commands, then data, per page window).
        #expect(dc.changes < overSPI.driver.statistics.transactions)
    }

    /// An independent reading of the memory LCD's wire format (Sharp's application note, sent
    /// MSB first): returns the lines written by each transaction, and applies them to `image`.
    struct SharpPanelModel {
        var image: [[Bool]]   // true = white
        var vcomSeen: [Bool] = []
        var clears = 0
        var lineWrites = 0
        let width: Int

        init(width: Int, height: Int) {
            self.width = width
            image = Array(repeating: Array(repeating: false, count: width), count: height)
        }

        static func timeOrderValue(_ byte: UInt8) -> Int {
            // Bits in time order (MSB first on the wire) read least significant first.
            var v = 0
            for k in 0..<8 where byte & (0x80 >> UInt8(k)) != 0 { v |= 1 << k }
            return v
        }

        mutating func take(_ t: [UInt8]) -> Int {
            let cmd = t[0]
            vcomSeen.append(cmd & 0x40 != 0)
            if cmd & 0x20 != 0 {
                #expect(t.count == 2 && t[1] == 0, "clear: command and 8 trailer bits")
                for y in image.indices { for x in 0..<width { image[y][x] = true } }
                clears += 1
                return 0
            }
            guard cmd & 0x80 != 0 else {
                #expect(t.count == 2 && t[1] == 0, "a VCOM toggle: command and 8 trailer bits")
                return 0
            }
            let perLine = 1 + width / 8 + 1
            #expect((t.count - 2) % perLine == 0, "whole lines and a final trailer")
            #expect(t.last == 0)
            var i = 1
            var lines = 0
            while i + perLine <= t.count - 1 {
                let address = Self.timeOrderValue(t[i])
                #expect(address >= 1 && address <= image.count)
                for x in 0..<width {
                    let byte = t[i + 1 + x / 8]
                    image[address - 1][x] = byte & (0x80 >> UInt8(x % 8)) != 0
                }
                #expect(t[i + perLine - 1] == 0, "8 trailer bits after each line")
                i += perLine
                lines += 1
            }
            lineWrites += lines
            return lines
        }
    }

    /// A 400×240 Sharp memory LCD through the same protocol: only changed lines, at most 16 per
    /// step, drawn pixels black (0), the picture on the panel equal to the framebuffer.
    @Test func sharpMemoryLCDShowsTheFramebuffer() throws {
        var driver = SharpMemoryDriver(model: .ls027b7dh01)
        var link = SPIDisplayLink(port: RecordingSPI())
        var panel = SharpPanelModel(width: 400, height: 240)
        try driver.start(bus: &link)
        for t in link.port.transactions { _ = panel.take(t) }
        #expect(panel.clears == 1)
        #expect(panel.lineWrites == 240, "the whole frame at start-up")
        #expect(link.port.transactions.count == 1 + 240 / SharpMemoryDriver.linesPerFlushStepMax)

        var fb = Framebuffer(width: 400, height: 240)
        fb.fill(Rect(x: 10, y: 200, width: 380, height: 30))   // bands 25...28: beyond an OLED's 8
        _ = fb.drawText("RIDE 42.0 KM", font: .medium, x: 20, y: 20)
        #expect(fb.dirtyPages & (1 << 27) != 0)
        driver.present(&fb)
        link.port.transactions.removeAll()
        var steps = 0
        while driver.hasPendingPages {
            let n = try driver.flushStep(bus: &link)
            #expect(n <= SharpMemoryDriver.linesPerFlushStepMax)
            steps += 1
        }
        for t in link.port.transactions { _ = panel.take(t) }
        for y in 0..<240 {
            for x in 0..<400 where panel.image[y][x] == fb[x, y] {
                Issue.record("pixel (\(x),\(y)): panel \(panel.image[y][x] ? "white" : "black"), framebuffer \(fb[x, y] ? "drawn" : "blank")")
                return
            }
        }
        let changedLines = panel.lineWrites - 240
        let drawnLines = (0..<240).filter { y in (0..<400).contains { fb[$0, y] } }.count
        #expect(drawnLines > 30 && changedLines == drawnLines, "only the lines that changed: \(changedLines) of \(drawnLines)")

        // One pixel changes: one line goes out.
        fb.setPixel(x: 399, y: 239)
        driver.present(&fb)
        link.port.transactions.removeAll()
        try driver.flushAll(bus: &link)
        #expect(link.port.transactions.count == 1)
        #expect(panel.take(link.port.transactions[0]) == 1)
        #expect(panel.image[239][399] == false)
    }

    /// VCOM alternates every 500 ms whether the picture changes or not: a standalone toggle when
    /// nothing else is sent, the current polarity in every command otherwise.
    @Test func sharpVcomAlternatesWithoutChanges() throws {
        var driver = SharpMemoryDriver(model: .ls013b7dh03)
        var link = SPIDisplayLink(port: RecordingSPI())
        try driver.start(bus: &link)
        var panel = SharpPanelModel(width: 128, height: 128)
        link.port.transactions.removeAll()
        var t: Int64 = 0
        var polarities: [Bool] = []
        while t <= 3_000 {
            if driver.refreshIfDue(atMs: t) {
                try driver.flushAll(bus: &link)
                for x in link.port.transactions { _ = panel.take(x) }
                polarities.append(panel.vcomSeen.last!)
                link.port.transactions.removeAll()
            }
            t += 100
        }
        #expect(polarities.count == 6, "toggles at 0.5, 1, ... 3 s after the first call")
        for i in 1..<polarities.count { #expect(polarities[i] != polarities[i - 1]) }
        // Nothing changed: only the rolling rewrite's slice (128 lines every 5 s) went out.
        #expect(panel.lineWrites == 6 * 13, "the rewrite's slices only")
    }

    /// A link that carries fewer bytes per transaction gets fewer lines per step, never a
    /// transaction it cannot carry.
    @Test func sharpStepsFitTheLink() throws {
        var driver = SharpMemoryDriver(model: .ls027b7dh01)
        var link = SPIDisplayLink(port: RecordingSPI(), transactionBytesMax: 200)
        try driver.start(bus: &link)
        #expect(link.port.transactions.allSatisfy { $0.count <= 200 })
        let lineWrites = link.port.transactions.filter { $0[0] & 0x80 != 0 }
        #expect(lineWrites.allSatisfy { ($0.count - 2) / 52 <= 3 }, "(200 - 2) / 52 = 3 lines per transaction")
        #expect(lineWrites.reduce(0) { $0 + ($1.count - 2) / 52 } == 240)
    }

    /// The framebuffer packs rows for row-addressed panels, both bit orders and polarities.
    @Test func framebufferPacksRows() {
        var fb = Framebuffer(width: 12, height: 16)
        fb.setPixel(x: 0, y: 9)
        fb.setPixel(x: 9, y: 9)
        var out = [UInt8](repeating: 0xAA, count: 2)
        out.withUnsafeMutableBufferPointer { fb.packRow(9, into: $0, leftmostInMSB: true, drawnIsZero: false) }
        #expect(out == [0b1000_0000, 0b0100_0000])
        out.withUnsafeMutableBufferPointer { fb.packRow(9, into: $0, leftmostInMSB: false, drawnIsZero: false) }
        #expect(out == [0b0000_0001, 0b0000_0010])
        out.withUnsafeMutableBufferPointer { fb.packRow(9, into: $0, leftmostInMSB: true, drawnIsZero: true) }
        #expect(out == [0b0111_1111, 0b1011_1111], "padding after the last column reads white")
        let big = Framebuffer(width: Framebuffer.widthMaxPx, height: Framebuffer.heightMaxPx)
        #expect(big.pageCount == 64 && big.dirtyPages == UInt64.max)
    }
}
