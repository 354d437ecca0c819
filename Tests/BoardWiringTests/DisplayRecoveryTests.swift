import AppCore
import BoardIO
import Device
import BoardWiring
import Display
import RideModel
import Testing

/// A display module on a bus that can NACK (unplugged, a glitching connector) and lose power
/// (a brown-out: the controller resets to display off, charge pump off, memory cleared, and
/// acknowledges every later write).
struct BrownOutBus: DisplayBus {
    var emulator = SSD1306Emulator()
    var nacking = false
    var nacks = 0
    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        if nacking { nacks += 1; throw .noDevice(path: "/dev/i2c-1", address: 0x3C) }
        try emulator.write(control: control, bytes)
    }
    mutating func powerCycle() { emulator.powerOnReset() }
}

/// The display comes back on its own, and the ride never waits for it (docs/display.md,
/// "Recovery"). Each of these left the panel dark before the recovery work.
struct DisplayRecoveryTests {
    func running(_ seconds: Int64) -> ScreenModel {
        var m = ScreenModel()
        m.mode = .running(page: 0)
        m.timerMs = seconds * 1000
        m.elapsedMs = seconds * 1000
        m.metrics[Int(Metric.heartRate.rawValue)] = 140
        return m
    }

    /// The run loop, in short: a 1 Hz tick shows the screen, pending pages are flushed a step at
    /// a time. Returns the first tick (ms) at which the panel shows the framebuffer, if any.
    func ride(_ screen: DisplayScreen<BrownOutBus>, fromS: Int64, toS: Int64, onTick: (Int64) -> Void = { _ in }) -> Int64? {
        var back: Int64?
        for s in fromS...toS {
            let now = MonotonicInstant(milliseconds: s * 1000)
            onTick(s)
            screen.show(running(s), at: now)
            var steps = 0
            while screen.hasPendingPages && steps < 20 { screen.flushStep(at: now); steps += 1 }
            if back == nil, screen.bus.emulator.isLit, screen.bus.emulator.panelImage().bytes == screen.pipeline.framebuffer.bytes {
                back = s * 1000
            }
        }
        return back
    }

    @Test func aBrownOutWithoutAnyBusErrorIsBackWithinFiveSeconds() throws {
        let screen = DisplayScreen(bus: BrownOutBus(), panel: PanelConfiguration())
        try screen.start()
        #expect(ride(screen, fromS: 100, toS: 110) == 100_000)
        var lossS: Int64 = 111
        for phase: Int64 in 0..<3 {                      // every phase of the 3 s refresh grid
            lossS += phase
            screen.bus.powerCycle()
            #expect(!screen.bus.emulator.isLit)
            let back = ride(screen, fromS: lossS, toS: lossS + 8)
            #expect(back != nil && back! - lossS * 1000 <= 5_000, "lost at \(lossS) s, back at \(String(describing: back))")
            lossS += 9
        }
        #expect(screen.busErrors == 0, "no bus error was ever seen")
        #expect(screen.bus.emulator.resets == 3)
    }

    @Test func afterABusErrorTheInitTableAndTheFrameAreResent() throws {
        let screen = DisplayScreen(bus: BrownOutBus(), panel: PanelConfiguration())
        var errors: [DisplayBusError] = []
        var recovered = 0
        screen.onError = { errors.append($0) }
        screen.onRecovered = { recovered += 1 }
        try screen.start()
        _ = ride(screen, fromS: 10, toS: 12)
        // The connector glitches for 7 s and the controller browns out meanwhile.
        let back = ride(screen, fromS: 13, toS: 40) { s in
            if s == 13 { screen.bus.nacking = true; screen.bus.powerCycle() }
            if s == 20 { screen.bus.nacking = false }
        }
        #expect(back != nil && back! <= 20_000 + DisplayScreen<BrownOutBus>.retryAfterErrorMs + 1_000,
                "answering again at 20 s, back on screen at \(String(describing: back))")
        #expect(errors.count == 1, "one report for the outage, not one per retry: \(errors)")
        #expect(screen.busErrors >= 2 && screen.bus.nacks >= 2, "retried while unplugged")
        #expect(recovered == 1 && screen.isAnswering && screen.status == "ok")
        #expect(screen.pipeline.driver.reinitializations >= 1)
    }

    @Test func aDisplayMissingAtBootIsUsedOnceItAnswers() throws {
        var bus = BrownOutBus()
        bus.nacking = true
        let screen = DisplayScreen(bus: bus, panel: PanelConfiguration())
        #expect(throws: DisplayBusError.noDevice(path: "/dev/i2c-1", address: 0x3C)) { try screen.start() }
        #expect(!screen.isAnswering)
        #expect(screen.status.hasPrefix("failed: no device acknowledged at address 0x3C"))
        #expect(screen.status.contains("retrying every 5 s"))
        // The ride goes on for 12 s without a display, then it is plugged in.
        let back = ride(screen, fromS: 1, toS: 30) { s in if s == 12 { screen.bus.nacking = false } }
        #expect(back != nil && back! <= 12_000 + DisplayScreen<BrownOutBus>.retryAfterErrorMs + 1_000,
                "plugged in at 12 s, on screen at \(String(describing: back))")
        #expect(screen.bus.nacks >= 3, "retried every few seconds while missing: \(screen.bus.nacks)")
        #expect(screen.bus.nacks <= 4, "not at every tick: \(screen.bus.nacks)")
        #expect(screen.isAnswering && screen.status == "ok")
        #expect(screen.bus.emulator.multiplexRows == 64 && screen.bus.emulator.segmentRemap, "the init table went out")
    }
}
