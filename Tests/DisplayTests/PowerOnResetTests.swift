import Display
import Testing

/// The controller's power-on reset and its supply in the emulator (a brown-out: what the
/// driver's recovery must repair; docs/display.md, "Recovery").
@Suite struct PowerOnResetTests {
    func send(_ e: inout SSD1306Emulator, _ control: UInt8, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { b throws(DisplayBusError) in try e.write(control: control, b) }
    }

    @Test(arguments: [OLEDController.ssd1306, .sh1106])
    func resetRestoresEveryRegisterAndClearsMemory(_ controller: OLEDController) throws {
        var e = SSD1306Emulator(controller: controller)
        let fresh = e
        let pump: [UInt8] = controller == .ssd1306 ? [0x8D, 0x14] : [0xAD, 0x8B]
        try send(&e, 0x00, pump + [0xA1, 0xC8, 0xA7, 0xA5, 0x81, 0x20, 0xA8, 0x1F, 0xD3, 0x05, 0x47, 0xAF, 0xB3, 0x04, 0x11])
        if controller == .ssd1306 { try send(&e, 0x00, [0x20, 0x00, 0x21, 4, 9, 0x22, 2, 5]) }
        try send(&e, 0x40, [0xAA, 0x55, 0xFF])
        try send(&e, 0x00, [0x81])                       // a contrast command cut off by the reset
        #expect(e.isLit && e.memory.contains { $0 != 0 })
        e.powerOnReset()
        #expect(e.resets == 1)
        #expect(!e.displayOn && !e.isLit)
        #expect(e.chargePumpOn == (controller == .sh1106), "the SSD1306's pump is off after reset, the SH1106's DC-DC on")
        #expect(e.memory == fresh.memory && e.memory.allSatisfy { $0 == 0 })
        #expect(e.addressingMode == .page && e.column == 0 && e.page == 0)
        #expect(e.columnStart == 0 && e.columnEnd == 127 && e.pageStart == 0 && e.pageEnd == 7)
        #expect(e.contrast == 0x7F && !e.inverse && !e.entireDisplayOn && !e.segmentRemap && !e.comScanRemapped)
        #expect(e.startLine == 0 && e.displayOffset == 0 && e.multiplexRows == 64)
        // The half-received contrast command was forgotten: the next byte is a command again.
        try send(&e, 0x00, [0xAF])
        #expect(e.displayOn && e.contrast == 0x7F)
    }

    @Test func theGlassNeedsTheChargePump() throws {
        var e = SSD1306Emulator()
        try send(&e, 0x00, [0xA1, 0xC8, 0xAF, 0xB0, 0x00, 0x10])
        try send(&e, 0x40, [0x01])
        #expect(e.displayOn && !e.isLit && !e.panelImage()[0, 0])
        try send(&e, 0x00, [0x8D, 0x14])
        #expect(e.isLit && e.panelImage()[0, 0])
        try send(&e, 0x00, [0x8D, 0x10])
        #expect(!e.isLit && !e.panelImage()[0, 0])
        var sh = SSD1306Emulator(controller: .sh1106)
        try send(&sh, 0x00, [0xA1, 0xC8, 0xAF, 0xB0, 0x02, 0x10])
        try send(&sh, 0x40, [0x01])
        #expect(sh.isLit && sh.panelImage()[0, 0], "the SH1106's DC-DC is on after reset")
        try send(&sh, 0x00, [0xAD, 0x8A])
        #expect(!sh.isLit)
    }
}
