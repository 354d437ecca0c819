import AppCore
import Display
import Screens
import Testing

/// A bus that records every transaction and forwards it to an emulator.
struct RecordingBus: DisplayBus {
    struct Transaction: Equatable {
        var control: UInt8
        var bytes: [UInt8]
    }
    var emulator: SSD1306Emulator
    var log: [Transaction] = []

    init(_ controller: OLEDController = .ssd1306, height: Int = 64) {
        emulator = SSD1306Emulator(controller: controller, height: height)
    }

    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        #expect(bytes.count >= 1 && bytes.count <= DisplayBusLimits.transactionBytesMax)
        log.append(Transaction(control: control, bytes: Array(bytes)))
        try emulator.write(control: control, bytes)
    }

    /// Pages written by the data transactions since `from`, per the SSD1306 window commands.
    func pagesWritten(from: Int = 0) -> Set<Int> {
        var pages = Set<Int>()
        var current: Int?
        for t in log[from...] {
            if t.control == OLEDControl.commands, t.bytes.count == 6, t.bytes[3] == OLEDCommand.pageAddress {
                current = Int(t.bytes[4])
            } else if t.control == OLEDControl.commands, t.bytes.count == 3, t.bytes[0] & 0xF8 == OLEDCommand.pageStart {
                current = Int(t.bytes[0] & 7)
            } else if t.control == OLEDControl.data, let p = current {
                pages.insert(p)
            }
        }
        return pages
    }
}

/// A bus that fails every write after `failAfter` transactions.
struct FailingBus: DisplayBus {
    var inner = RecordingBus()
    var failAfter: Int
    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        if inner.log.count >= failAfter { throw .noDevice(path: "/dev/i2c-1", address: 0x3C) }
        try inner.write(control: control, bytes)
    }
}

@Suite struct DriverTests {
    func started(_ controller: OLEDController = .ssd1306, height: Int = 64) throws -> (DisplayDriver, RecordingBus) {
        var driver = DisplayDriver(panel: PanelConfiguration(controller: controller, height: height))
        var bus = RecordingBus(controller, height: height)
        try driver.start(bus: &bus)
        return (driver, bus)
    }

    @Test(arguments: [OLEDController.ssd1306, .sh1106], [64, 32])
    func startConfiguresThePanel(_ controller: OLEDController, height: Int) throws {
        let (driver, bus) = try started(controller, height: height)
        let e = bus.emulator
        #expect(e.unknownCommands == 0, "every init byte is a command the \(controller) knows")
        #expect(e.displayOn && driver.isOn)
        #expect(e.multiplexRows == height)
        #expect(e.segmentRemap && e.comScanRemapped)
        #expect(e.contrast == driver.panel.contrastActive)
        #expect(e.addressingMode == (controller == .ssd1306 ? .horizontal : .page))
        #expect(bus.log.first == .init(control: 0x00, bytes: [OLEDCommand.displayOff]), "display off first")
        #expect(bus.log.last == .init(control: 0x00, bytes: [OLEDCommand.displayOn]), "display on last, after memory is cleared")
        #expect(!driver.hasPendingPages)
    }

    /// Random frames through the driver into the emulator come back identical, for both
    /// controllers and both panel heights (the SH1106 column offset included).
    @Test(arguments: [OLEDController.ssd1306, .sh1106], [64, 32])
    func framesRoundTripThroughTheEmulator(_ controller: OLEDController, height: Int) throws {
        var (driver, bus) = try started(controller, height: height)
        var seed: UInt64 = 0xD15_01A7
        let seedText = String(seed, radix: 16)
        var fb = Framebuffer(width: 128, height: height)
        for round in 0..<20 {
            for _ in 0..<40 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let v = Int(seed >> 20)
                fb.fill(Rect(x: v % 130 - 1, y: (v >> 8) % 66 - 1, width: (v >> 16) % 30, height: (v >> 24) % 12), on: (v >> 30) & 1 == 0)
            }
            driver.present(&fb)
            try driver.flushAll(bus: &bus)
            let image = bus.emulator.panelImage()
            #expect(image.bytes == fb.bytes, "seed \(seedText) round \(round): panel differs from the framebuffer")
        }
        if controller == .sh1106 {
            // Memory columns 0, 1, 130, 131 are off the glass: never written.
            for page in 0..<8 { for c in [0, 1, 130, 131] { #expect(bus.emulator.memoryByte(page: page, column: c) == 0) } }
        }
    }

    @Test func unchangedFrameSendsNothing() throws {
        var (driver, bus) = try started()
        var renderer = ScreenRenderer()
        var fb = Framebuffer.oled128x64()
        let model = ScreenCatalogue.riding()
        renderer.render(model, into: &fb)
        driver.present(&fb)
        try driver.flushAll(bus: &bus)
        let sent = bus.log.count
        renderer.render(model, into: &fb)
        driver.present(&fb)
        #expect(!driver.hasPendingPages)
        #expect(try driver.flushStep(bus: &bus) == 0)
        #expect(bus.log.count == sent)
    }

    /// One more second on the timer changes one digit: only the pages that digit covers are
    /// sent, and only the columns between its first and last changed byte.
    @Test func oneDigitSendsOnlyItsPages() throws {
        var (driver, bus) = try started()
        var renderer = ScreenRenderer()
        var fb = Framebuffer.oled128x64()
        var model = ScreenCatalogue.riding()   // 1:02:03
        renderer.render(model, into: &fb)
        driver.present(&fb)
        try driver.flushAll(bus: &bus)
        let before = fb
        let logStart = bus.log.count
        let dataBefore = driver.statistics.dataBytes
        model.timerMs += 1000                  // 1:02:04
        renderer.render(model, into: &fb)
        // The pages and columns where the two frames differ, pixel by pixel.
        var pages = Set<Int>(), columns = Set<Int>()
        for y in 0..<64 { for x in 0..<128 where before[x, y] != fb[x, y] { pages.insert(y / 8); columns.insert(x) } }
        #expect(!pages.isEmpty)
        #expect(pages.isSubset(of: [0, 1, 2, 3]), "the huge timer lies in pages 0-3")
        driver.present(&fb)
        var steps = 0
        while driver.hasPendingPages { steps += try driver.flushStep(bus: &bus) }
        #expect(steps == pages.count)
        #expect(bus.pagesWritten(from: logStart) == pages)
        let perPage = columns.max()! - columns.min()! + 1
        #expect(driver.statistics.dataBytes - dataBefore <= perPage * pages.count)
        #expect(bus.emulator.panelImage().bytes == fb.bytes)
    }

    /// A newer frame replaces pages not yet sent; a page changed and changed back sends nothing.
    @Test func newerFrameSupersedesUnsentPages() throws {
        var (driver, bus) = try started()
        var fb = Framebuffer.oled128x64()
        _ = fb.takeDirtyPages()
        fb.fill(Rect(x: 0, y: 0, width: 128, height: 64))   // frame A: all lit
        driver.present(&fb)
        try driver.flushStep(bus: &bus)                     // page 0 of A goes out
        #expect(driver.pendingPages == 0b1111_1110)
        fb.fill(Rect(x: 0, y: 0, width: 128, height: 64), on: false)
        fb.fill(Rect(x: 0, y: 0, width: 128, height: 8))    // frame B: only page 0 lit
        driver.present(&fb)
        #expect(driver.pendingPages == 0, "pages 1-7 of A never went out and B equals what the panel shows")
        fb.setPixel(x: 9, y: 40)                            // frame C
        driver.present(&fb)
        try driver.flushAll(bus: &bus)
        #expect(bus.emulator.panelImage().bytes == fb.bytes)
    }

    @Test func everyFlushStepFitsTheLoopBudget() throws {
        var (driver, bus) = try started()
        var fb = Framebuffer.oled128x64()
        fb.fill(fb.bounds)
        driver.invalidate()
        driver.present(&fb)
        var steps = 0
        while driver.hasPendingPages {
            let before = driver.statistics
            #expect(try driver.flushStep(bus: &bus) <= DisplayDriver.pagesPerFlushStepMax)
            var step = driver.statistics
            step.transactions -= before.transactions
            step.payloadBytes -= before.payloadBytes
            #expect(step.busTimeUs(clockHz: 400_000) <= 3_300, "one step holds the bus \(step.busTimeUs()) us")
            steps += 1
        }
        #expect(steps == 8)
        // A full frame: 8 x (6 window + 128 data) payload bytes in 8 x (1 + 4) transactions.
        #expect(driver.statistics.payloadBytes >= 8 * 134)
    }

    @Test func busErrorKeepsThePageForLater() throws {
        var driver = DisplayDriver(panel: PanelConfiguration())
        var failing = FailingBus(failAfter: 1000)
        try driver.start(bus: &failing)
        var fb = Framebuffer.oled128x64()
        fb.fill(Rect(x: 0, y: 0, width: 5, height: 5))
        driver.present(&fb)
        failing.failAfter = failing.inner.log.count + 1     // window goes out, data fails
        #expect(throws: DisplayBusError.noDevice(path: "/dev/i2c-1", address: 0x3C)) { try driver.flushStep(bus: &failing) }
        #expect(driver.pendingPages == 1, "the page is still to be sent")
        failing.failAfter = .max
        try driver.flushAll(bus: &failing)
        #expect(failing.inner.emulator.panelImage().bytes == fb.bytes)
    }

    @Test func contrastDimsWhenIdleAndDisplayTurnsOff() throws {
        var (driver, bus) = try started()
        try driver.setDimmed(true, bus: &bus)
        #expect(bus.emulator.contrast == driver.panel.contrastIdle)
        let count = bus.log.count
        try driver.setDimmed(true, bus: &bus)
        #expect(bus.log.count == count, "no command when the level is already right")
        try driver.setDimmed(false, bus: &bus)
        #expect(bus.emulator.contrast == driver.panel.contrastActive)
        try driver.setDisplayOn(false, bus: &bus)
        #expect(!bus.emulator.displayOn)
        #expect(!bus.emulator.panelImage().bytes.contains { $0 != 0 })
    }
}

@Suite struct PipelineTests {
    @Test func dimsWhenIdleOnly() throws {
        var bus = RecordingBus()
        var pipeline = DisplayPipeline()
        try pipeline.start(bus: &bus)
        var model = ScreenModel()
        try pipeline.applyBrightness(for: model, bus: &bus)
        #expect(bus.emulator.contrast == pipeline.driver.panel.contrastIdle)
        model.mode = .running(page: 0)
        try pipeline.applyBrightness(for: model, bus: &bus)
        #expect(bus.emulator.contrast == pipeline.driver.panel.contrastActive)
    }

    @Test func showQueuesAndFlushStepSendsOnePageAtATime() throws {
        var bus = RecordingBus()
        var pipeline = DisplayPipeline()
        try pipeline.start(bus: &bus)
        pipeline.show(ScreenCatalogue.riding())
        var steps = 0
        while pipeline.hasPendingPages {
            #expect(try pipeline.flushStep(bus: &bus) <= 1)
            steps += 1
            #expect(steps <= 8)
        }
        #expect(bus.emulator.panelImage().bytes == pipeline.framebuffer.bytes)
    }
}
