import Display
import Foundation
@testable import Screens
import Testing

/// Seeded randomized tests; the seed is in every failure message.
@Suite struct PropertyTests {
    struct Generator {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
    }

    /// Frames presented while earlier ones are only partly flushed: whatever the interleaving,
    /// once everything is flushed the panel shows the newest frame, and no step sends more than
    /// one page.
    @Test(arguments: [OLEDController.ssd1306, .sh1106])
    func interleavedPresentAndFlushEndsOnTheNewestFrame(_ controller: OLEDController) throws {
        let seed: UInt64 = 0xF1A5_4001
        var g = Generator(state: seed)
        var driver = DisplayDriver(panel: PanelConfiguration(controller: controller))
        var bus = RecordingBus(controller)
        try driver.start(bus: &bus)
        var fb = Framebuffer.oled128x64()
        for round in 0..<200 {
            for _ in 0..<g.next(6) {
                fb.fill(Rect(x: g.next(128), y: g.next(64), width: g.next(20), height: g.next(20)), on: g.next(2) == 0)
            }
            driver.present(&fb)
            for _ in 0..<g.next(4) {
                let before = bus.log.count
                #expect(try driver.flushStep(bus: &bus) <= 1)
                #expect(bus.log.count - before <= 5, "seed \(seed) round \(round): one window + 4 data transactions at most")
            }
        }
        try driver.flushAll(bus: &bus)
        #expect(!driver.hasPendingPages)
        #expect(bus.emulator.panelImage().bytes == fb.bytes, "seed \(seed)")
    }

    /// TextBuffer's fixed-point formatting agrees with printf for random values.
    @Test func decimalsAgreeWithPrintf() {
        let seed: UInt64 = 0xDEC1_3A15
        var g = Generator(state: seed)
        for i in 0..<5_000 {
            // Values with at most 3 decimals plus a small offset so no value sits on a rounding tie.
            let value = Double(g.next(2_000_000) - 1_000_000) / 1000 + 0.0001
            let decimals = g.next(3)
            var t = TextBuffer()
            t.append(value, decimals: decimals)
            let ours = String(decoding: Array(t), as: UTF8.self)
            var expected = String(format: "%.\(decimals)f", value)
            if expected.hasPrefix("-") && Double(expected) == 0 { expected.removeFirst() }
            #expect(ours == expected, "seed \(seed) case \(i): \(value) with \(decimals) decimals")
            if ours != expected { return }
        }
    }

    @Test func clockFormatting() {
        let seed: UInt64 = 0xC10C_0001
        var g = Generator(state: seed)
        for _ in 0..<2_000 {
            let ms = Int64(g.next(40 * 3_600_000))
            var t = TextBuffer()
            t.append(clockMs: ms)
            let s = ms / 1000
            let expected = s >= 3600
                ? String(format: "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60)
                : String(format: "%d:%02d", s / 60, s % 60)
            #expect(String(decoding: Array(t), as: UTF8.self) == expected, "seed \(seed) ms \(ms)")
        }
    }
}
