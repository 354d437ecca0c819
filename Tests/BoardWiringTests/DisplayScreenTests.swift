import AppCore
import BoardIO
import BoardWiring
import Device
import Display
import RideModel
import Screens
import Testing

/// A bus that fails while `failing` is set (an unplugged display) and otherwise passes writes
/// to an emulator.
struct FlakyBus: DisplayBus {
    var emulator = SSD1306Emulator()
    var failing = false
    var writes = 0
    var dataWrites = 0
    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        if failing { throw .noDevice(path: "/dev/i2c-1", address: 0x3C) }
        writes += 1
        if control == OLEDControl.data { dataWrites += 1 }
        try emulator.write(control: control, bytes)
    }
}

struct DisplayScreenTests {
    /// The first data page with the ride timer at `seconds` (the timer is on every data page).
    func running(_ seconds: Int64) -> ScreenModel {
        var m = ScreenModel()
        m.mode = .running(page: 0)
        m.timerMs = seconds * 1000
        m.elapsedMs = seconds * 1000
        m.metrics[Int(Metric.heartRate.rawValue)] = 140
        return m
    }

    @Test func showQueuesPagesAndEachFlushStepSendsAtMostOne() throws {
        let screen = DisplayScreen(bus: FlakyBus(), panel: PanelConfiguration())
        try screen.start()
        var pendingCalls = 0
        screen.onPagesPending = { pendingCalls += 1 }
        screen.show(running(140), at: MonotonicInstant(milliseconds: 1000))
        #expect(screen.hasPendingPages)
        #expect(pendingCalls == 1)
        var steps = 0
        while screen.hasPendingPages {
            let before = screen.pagesSent
            #expect(screen.flushStep(at: MonotonicInstant(milliseconds: 1000)) == 1)
            #expect(screen.pagesSent == before + 1)
            steps += 1
            #expect(steps <= 8, "more steps than the panel has pages")
        }
        #expect(steps >= 1)
        // The same screen again changes nothing: no page is queued.
        screen.show(running(140), at: MonotonicInstant(milliseconds: 1100))
        #expect(!screen.hasPendingPages)
        // The timer's last digit changes: fewer pages than a full frame.
        screen.show(running(141), at: MonotonicInstant(milliseconds: 1200))
        var changed = 0
        while screen.hasPendingPages { changed += screen.flushStep(at: MonotonicInstant(milliseconds: 1200)) }
        #expect(changed >= 1 && changed < 8)
    }

    @Test func aFailingBusIsCountedSuspendedAndEverythingIsResentWhenItAnswers() throws {
        let screen = DisplayScreen(bus: FlakyBus(), panel: PanelConfiguration())
        try screen.start()
        var errors: [DisplayBusError] = []
        screen.onError = { errors.append($0) }
        screen.show(running(150), at: MonotonicInstant(milliseconds: 0))
        while screen.hasPendingPages { screen.flushStep(at: MonotonicInstant(milliseconds: 0)) }
        screen.bus.failing = true
        screen.show(running(151), at: MonotonicInstant(milliseconds: 100))
        #expect(screen.flushStep(at: MonotonicInstant(milliseconds: 100)) == 0)
        #expect(screen.busErrors >= 1 && errors.count == Int(screen.busErrors))
        // Suspended: no retries (and no error storm) until the retry time.
        let count = screen.busErrors
        #expect(!screen.hasPendingPages)
        #expect(screen.flushStep(at: MonotonicInstant(milliseconds: 2000)) == 0)
        #expect(screen.busErrors == count)
        screen.bus.failing = false
        let retryAt = MonotonicInstant(milliseconds: 100 + DisplayScreen<FlakyBus>.retryAfterErrorMs)
        screen.show(running(152), at: retryAt)
        var sent = 0
        while screen.hasPendingPages { sent += screen.flushStep(at: retryAt) }
        #expect(sent == 8, "after an error the whole frame is resent")
    }

    @Test func blankTurnsThePanelOff() throws {
        let screen = DisplayScreen(bus: FlakyBus(), panel: PanelConfiguration())
        try screen.start()
        #expect(screen.bus.emulator.displayOn)
        screen.blank()
        #expect(!screen.bus.emulator.displayOn)
    }

    @Test func latencyProbeReportsDataTransactionsOnly() throws {
        var pages = 0
        let bus = LatencyProbeBus(emulatedClockHz: 0, nowNs: { 0 }, onData: { pages += 1 })
        let screen = DisplayScreen(bus: bus, panel: PanelConfiguration())
        try screen.start()
        let afterStart = pages
        #expect(afterStart > 0) // the start-up clear writes data
        screen.show(running(130), at: MonotonicInstant(milliseconds: 0))
        screen.flushStep(at: MonotonicInstant(milliseconds: 0))
        #expect(pages > afterStart)
        #expect(screen.bus.dataTransactions == pages)
        #expect(screen.bus.transactions > screen.bus.dataTransactions)
    }
}


/// The board's screen is panel-agnostic: a memory LCD behind the same `PanelScreen` (here a
/// 128×64 one, the size the standard layouts are drawn for) gets the renderer's picture.
struct PanelScreenTests {
    struct Recorder: SPIWriter {
        var transactions: [[UInt8]] = []
        mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) { transactions.append(Array(bytes)) }
    }

    @Test func aMemoryLCDBehindTheBoardScreen() throws {
        let driver = SharpMemoryDriver(model: .init(width: 128, height: 64))
        let screen = PanelScreen(bus: SPIDisplayLink(port: Recorder()), pipeline: PanelPipeline(driver: driver, layouts: .standard128x64))
        try screen.start()
        var m = ScreenModel()
        m.mode = .running(page: 0)
        m.timerMs = 754_000
        m[.speed] = 9.1
        screen.show(m, at: MonotonicInstant(milliseconds: 1_000))
        var steps = 0
        while screen.hasPendingPages && steps < 20 { screen.flushStep(at: MonotonicInstant(milliseconds: 1_000)); steps += 1 }
        #expect(!screen.hasPendingPages && steps <= 64 / SharpMemoryDriver.linesPerFlushStepMax + 1)
        // Rebuild the panel's picture from the wire and compare it with what was rendered.
        var white = Array(repeating: Array(repeating: true, count: 128), count: 64)
        for t in screen.bus.port.transactions where t[0] & 0x80 != 0 {
            var i = 1
            while i + 18 <= t.count - 1 {
                var address = 0
                for k in 0..<8 where t[i] & (0x80 >> UInt8(k)) != 0 { address |= 1 << k }
                for x in 0..<128 { white[address - 1][x] = t[i + 1 + x / 8] & (0x80 >> UInt8(x % 8)) != 0 }
                i += 18
            }
        }
        let fb = screen.pipeline.framebuffer
        var mismatches = 0
        var blackPixels = 0
        for y in 0..<64 {
            for x in 0..<128 {
                let drawn: Bool = fb[x, y]
                let isWhite: Bool = white[y][x]
                if isWhite == drawn { mismatches += 1 }
                if !isWhite { blackPixels += 1 }
            }
        }
        #expect(mismatches == 0)
        #expect(blackPixels > 100, "something was drawn")
    }
}
