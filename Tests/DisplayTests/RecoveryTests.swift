import AppCore
import Display
import Screens
import Testing

/// The driver's recovery from a controller reset: the init table resent after a bus error, and
/// the periodic state re-assertion and full rewrite that repair a reset nobody saw
/// (docs/display.md, "Recovery").
@Suite struct DriverRecoveryTests {
    /// A running screen drawn into a framebuffer.
    func frame(timerMs: Int64 = 3_723_000) -> Framebuffer {
        var renderer = ScreenRenderer()
        var fb = Framebuffer.oled128x64()
        var model = ScreenCatalogue.riding()
        model.timerMs = timerMs
        renderer.render(model, into: &fb)
        return fb
    }

    @Test(arguments: [OLEDController.ssd1306, .sh1106])
    func reinitializeResendsTheInitTableTheFrameAndDisplayOn(_ controller: OLEDController) throws {
        var driver = DisplayDriver(panel: PanelConfiguration(controller: controller))
        var bus = RecordingBus(controller)
        try driver.start(bus: &bus)
        var fb = frame()
        driver.present(&fb)
        try driver.flushAll(bus: &bus)
        try driver.setDimmed(true, bus: &bus)
        bus.emulator.powerOnReset()                      // brown-out during a bus error
        driver.reinitialize()
        #expect(driver.hasPendingPages)
        let from = bus.log.count
        var steps = 0, pages = 0
        while driver.hasPendingPages {
            let before = driver.statistics
            pages += try driver.flushStep(bus: &bus)
            var step = driver.statistics
            step.transactions -= before.transactions
            step.payloadBytes -= before.payloadBytes
            #expect(step.busTimeUs(clockHz: 400_000) <= 3_300, "a recovery step holds the bus \(step.busTimeUs()) us")
            steps += 1
            #expect(steps <= 8 + 3)
        }
        #expect(pages == 8)
        #expect(bus.log[from] == .init(control: 0x00, bytes: [OLEDCommand.displayOff]), "the init table comes first")
        #expect(bus.log.last == .init(control: 0x00, bytes: [OLEDCommand.displayOn]), "display on after the frame")
        #expect(bus.emulator.panelImage().bytes == fb.bytes)
        #expect(bus.emulator.contrast == driver.panel.contrastIdle, "the contrast in force is restored, not the init table's")
        #expect(driver.reinitializations == 1)
    }

    /// A reset without any bus error: nothing tells the driver, yet the periodic refresh brings
    /// the picture back within one refresh period of the first call after the reset.
    @Test(arguments: [OLEDController.ssd1306, .sh1106])
    func periodicRefreshRepairsASilentReset(_ controller: OLEDController) throws {
        var driver = DisplayDriver(panel: PanelConfiguration(controller: controller))
        var bus = RecordingBus(controller)
        try driver.start(bus: &bus)
        var fb = frame()
        driver.present(&fb)
        try driver.flushAll(bus: &bus)
        var nowMs: Int64 = 10_000
        let queued = driver.refreshIfDue(atMs: nowMs)
        #expect(!queued, "the first call only starts the grid")
        bus.emulator.powerOnReset()
        #expect(!bus.emulator.isLit)
        var backAtMs: Int64?
        while nowMs <= 10_000 + DisplayDriver.refreshPeriodMs + 1_000 {
            nowMs += 1_000                                   // the board's 1 Hz tick
            driver.refreshIfDue(atMs: nowMs)
            try driver.flushAll(bus: &bus)
            if backAtMs == nil, bus.emulator.panelImage().bytes == fb.bytes { backAtMs = nowMs }
        }
        #expect(backAtMs != nil && backAtMs! - 10_000 <= DisplayDriver.refreshPeriodMs, "back at \(String(describing: backAtMs))")
        #expect(bus.emulator.segmentRemap && bus.emulator.comScanRemapped && bus.emulator.multiplexRows == 64)
        #expect(bus.emulator.addressingMode == (controller == .ssd1306 ? .horizontal : .page))
        #expect(DisplayDriver.refreshPeriodMs + 1_000 < 5_000, "a silent reset is repaired within 5 s")
    }

    /// The refresh is one transaction of state commands (no display off: no flicker) and the
    /// frame, on a fixed grid whatever the call jitter.
    @Test func refreshSendsStateWithoutDisplayOffOnAFixedGrid() throws {
        var driver = DisplayDriver(panel: PanelConfiguration())
        var bus = RecordingBus()
        try driver.start(bus: &bus)
        var due: [Int64] = []
        var t: Int64 = 0
        driver.refreshIfDue(atMs: t)
        while t + 999 <= 30_000 {
            t += 999                                         // ticks a little under a second apart
            let from = bus.log.count
            if driver.refreshIfDue(atMs: t) { due.append(t) }
            try driver.flushAll(bus: &bus)
            for tr in bus.log[from...] where tr.control == OLEDControl.commands {
                #expect(tr.bytes.first != OLEDCommand.displayOff && tr.bytes.last != OLEDCommand.displayOff,
                        "a refresh never switches the display off")
            }
        }
        #expect(due.count == 9, "every 3 s over 30 s: \(due)")
        for (i, d) in due.enumerated() { #expect(d >= Int64(i + 1) * 3_000 && d < Int64(i + 1) * 3_000 + 1_000) }
        let state = bus.log.filter { $0.control == OLEDControl.commands && $0.bytes.count > 8 }
        #expect(state.count == 9)
        #expect(state.allSatisfy { $0.bytes.last == OLEDCommand.displayOn && $0.bytes.count <= DisplayBusLimits.transactionBytesMax })
        #expect(bus.emulator.unknownCommands == 0)
    }
}
