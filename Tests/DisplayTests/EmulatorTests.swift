import Display
import Testing

/// The emulator against the controllers' documented addressing behaviour (SSD1306 datasheet
/// rev 1.1 §10.1.3 page, §10.1.4 horizontal, §10.1.5 vertical; SH1106 page addressing).
@Suite struct EmulatorTests {
    func send(_ e: inout SSD1306Emulator, _ control: UInt8, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { b throws(DisplayBusError) in try e.write(control: control, b) }
    }

    @Test func pageModeIsTheResetDefaultAndWrapsWithinThePage() throws {
        var e = SSD1306Emulator()
        #expect(e.addressingMode == .page)
        try send(&e, 0x00, [0xB2, 0x05, 0x17])          // page 2, column 0x75 = 117
        #expect(e.page == 2 && e.column == 117)
        try send(&e, 0x40, Array(1...12))               // columns 117...127, then 0 of page 2
        #expect(e.memoryByte(page: 2, column: 117) == 1)
        #expect(e.memoryByte(page: 2, column: 127) == 11)
        #expect(e.memoryByte(page: 2, column: 0) == 12, "wraps to column 0, same page")
        #expect(e.memoryByte(page: 3, column: 0) == 0)
    }

    @Test func horizontalModeWalksTheWindowRowByRow() throws {
        var e = SSD1306Emulator()
        try send(&e, 0x00, [0x20, 0x00, 0x21, 10, 12, 0x22, 1, 2])
        #expect(e.column == 10 && e.page == 1)
        try send(&e, 0x40, [1, 2, 3, 4, 5, 6, 7])
        #expect([10, 11, 12].map { e.memoryByte(page: 1, column: $0) } == [7, 2, 3], "7th byte wrapped to the window start")
        #expect([10, 11, 12].map { e.memoryByte(page: 2, column: $0) } == [4, 5, 6])
        #expect(e.memoryByte(page: 1, column: 13) == 0 && e.memoryByte(page: 3, column: 10) == 0)
    }

    @Test func verticalModeWalksTheWindowColumnByColumn() throws {
        var e = SSD1306Emulator()
        try send(&e, 0x00, [0x20, 0x01, 0x21, 5, 6, 0x22, 3, 4])
        try send(&e, 0x40, [1, 2, 3, 4, 5])
        #expect(e.memoryByte(page: 3, column: 5) == 5, "5th byte wrapped to the window start")
        #expect(e.memoryByte(page: 4, column: 5) == 2)
        #expect(e.memoryByte(page: 3, column: 6) == 3)
        #expect(e.memoryByte(page: 4, column: 6) == 4)
    }

    @Test func pageModeCommandsDoNothingInHorizontalMode() throws {
        var e = SSD1306Emulator()
        try send(&e, 0x00, [0x20, 0x00, 0xB5, 0x03])
        #expect(e.page == 0 && e.column == 0)
    }

    @Test func sh1106ShowsColumnsTwoToOneHundredTwentyNine() throws {
        var e = SSD1306Emulator(controller: .sh1106)
        try send(&e, 0x00, [0xA1, 0xC8, 0xAF, 0xB0, 0x02, 0x10])   // page 0, column 2
        try send(&e, 0x40, [0x01])
        var image = e.panelImage()
        #expect(image[0, 0], "memory column 2 is the leftmost pixel")
        try send(&e, 0x00, [0xB7, 0x03, 0x18])                      // page 7, column 0x83 = 131
        try send(&e, 0x40, [0xFF, 0xAA])
        #expect(e.memoryByte(page: 7, column: 131) == 0xFF)
        #expect(e.droppedDataBytes == 1, "no column past 131")
        image = e.panelImage()
        #expect(!image[127, 63], "column 131 is off the glass")
        try send(&e, 0x00, [0x20, 0x00])
        #expect(e.unknownCommands == 1, "the SH1106 has no addressing-mode command")
    }

    @Test func controlByteWithContinuationBit() throws {
        var e = SSD1306Emulator()
        // Co=1 command, Co=1 command, then Co=0 data stream.
        try send(&e, 0x80, [0xB1, 0x80, 0x04, 0x40, 0x0F, 0xF0])
        #expect(e.memoryByte(page: 1, column: 4) == 0x0F)
        #expect(e.memoryByte(page: 1, column: 5) == 0xF0)
    }

    @Test func commandArgumentsMaySpanTransactions() throws {
        var e = SSD1306Emulator()
        try send(&e, 0x00, [0x81])
        try send(&e, 0x00, [0x33])
        #expect(e.contrast == 0x33)
        #expect(e.unknownCommands == 0)
    }

    @Test func panelOrientationInverseAndOff() throws {
        var e = SSD1306Emulator()
        try send(&e, 0x00, [0xAF, 0xB0, 0x00, 0x10])
        try send(&e, 0x40, [0x01])                     // memory column 0, row 0
        #expect(e.panelImage().bytes.allSatisfy { $0 == 0 }, "charge pump off after reset: the glass stays dark")
        try send(&e, 0x00, [0x8D, 0x14])
        // Reset orientation (A0, C0) shows memory rotated by 180 degrees on these modules.
        #expect(e.panelImage()[127, 63])
        try send(&e, 0x00, [0xA1, 0xC8])
        #expect(e.panelImage()[0, 0])
        try send(&e, 0x00, [0xA7])
        #expect(!e.panelImage()[0, 0] && e.panelImage()[1, 0])
        try send(&e, 0x00, [0xA6, 0xA5])
        #expect(e.panelImage()[50, 50], "entire display on")
        try send(&e, 0x00, [0xA4, 0x41])               // start line 1: memory row 1 at the top
        #expect(!e.panelImage()[0, 0] && e.panelImage()[0, 63])
        try send(&e, 0x00, [0x40, 0xAE])
        #expect(e.panelImage().bytes.allSatisfy { $0 == 0 })
    }
}
