import AppCore
import Display
@testable import Screens
import Testing

/// The Sharp memory LCD's driver and emulator: the emulator against the tests' own reading of
/// the wire, the rolling rewrite that repairs a panel that lost its supply, VCOM by command or
/// by the EXTCOMIN pin, steps bounded by the clock.
struct SharpMemoryTests {
    /// Every transaction to the emulator and to the independent model (PanelSeamTests).
    struct Tee: SPIWriter {
        var emulator: SharpMemoryEmulator
        var model: PanelSeamTests.SharpPanelModel
        var bytes = 0
        var transactions = 0
        mutating func write(_ b: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
            try emulator.send(.data, b)
            _ = model.take(Array(b))
            bytes += b.count
            transactions += 1
        }
    }

    func random(_ fb: inout Framebuffer, _ g: inout SplitMix) {
        for _ in 0..<g.next(8) {
            fb.fill(Rect(x: g.next(fb.width), y: g.next(fb.height), width: g.next(60), height: g.next(40)), on: g.next(2) == 0)
        }
    }

    struct SplitMix {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
    }

    /// Random frames, partly flushed while VCOM flips: the emulator holds what the independent
    /// reading holds, and once flushed both show the newest frame.
    @Test(arguments: [SharpMemoryDriver.Model.ls027b7dh01, .ls013b7dh03])
    func emulatorAgreesWithTheIndependentReading(_ model: SharpMemoryDriver.Model) throws {
        let seed: UInt64 = 0x5AA4_0001
        var g = SplitMix(state: seed)
        var driver = SharpMemoryDriver(model: model, linesPerStep: 8)
        var link = SPIDisplayLink(port: Tee(emulator: SharpMemoryEmulator(model: model),
                                            model: .init(width: model.width, height: model.height)))
        try driver.start(bus: &link)
        var fb = Framebuffer(width: model.width, height: model.height)
        var t: Int64 = 0
        for round in 0..<150 {
            random(&fb, &g)
            driver.present(&fb)
            t += Int64(g.next(400))
            driver.refreshIfDue(atMs: t)
            for _ in 0..<g.next(5) { try driver.flushStep(bus: &link) }
            let e = link.port.emulator, m = link.port.model
            #expect(e.vcom == (m.vcomSeen.last ?? false), "seed \(seed) round \(round): VCOM")
            for y in 0..<model.height {
                for x in 0..<model.width where e.isDark(x: x, y: y) == m.image[y][x] {
                    Issue.record("seed \(seed) round \(round): pixel (\(x),\(y)) differs")
                    return
                }
            }
        }
        try driver.flushAll(bus: &link)
        #expect(link.port.emulator.panelImage().bytes == fb.bytes)
        #expect(link.port.emulator.malformed == 0)
    }

    /// A 400×240 panel started and showing what `draw` draws, flushed.
    static func shown(_ draw: (inout Framebuffer) -> Void) throws
        -> (SharpMemoryDriver, SPIDisplayLink<SharpMemoryEmulator, NoDataCommandLine>, Framebuffer) {
        var driver = SharpMemoryDriver(model: .ls027b7dh01, linesPerStep: 8)
        var link = SPIDisplayLink(port: SharpMemoryEmulator(model: .ls027b7dh01))
        try driver.start(bus: &link)
        var fb = Framebuffer(width: 400, height: 240)
        draw(&fb)
        driver.present(&fb)
        try driver.flushAll(bus: &link)
        return (driver, link, fb)
    }

    /// A panel that lost its supply (nothing on SPI says so) shows the frame again within the
    /// rewrite period, with no change to the picture, VCOM flips only.
    @Test func aPanelThatLostItsSupplyIsRightWithinTheRewritePeriod() throws {
        var (driver, link, fb) = try Self.shown { fb in
            _ = fb.drawText("1:02:03", font: Font.digitsHuge2x, x: 10, y: 10)
            fb.fill(Rect(x: 0, y: 120, width: 400, height: 3))
        }
        #expect(link.port.panelImage().bytes == fb.bytes)
        var t: Int64 = 10_000
        driver.refreshIfDue(atMs: t)
        link.port.powerLoss()
        #expect(link.port.panelImage().bytes != fb.bytes)
        var repairedAt: Int64?
        while t <= 10_000 + SharpMemoryDriver.rewritePeriodMs + SharpMemoryDriver.vcomPeriodMs {
            t += 100
            driver.refreshIfDue(atMs: t)
            try driver.flushAll(bus: &link)
            if repairedAt == nil, link.port.panelImage().bytes == fb.bytes { repairedAt = t }
        }
        let at = try #require(repairedAt, "repaired")
        #expect(at - 10_000 <= SharpMemoryDriver.rewritePeriodMs, "within \(SharpMemoryDriver.rewritePeriodMs) ms: \(at - 10_000)")
    }

    /// The same with a loop that comes late to every duty (a turn each 1.3 s: a stalled card, a
    /// loaded CPU; the VM's loaded run took over 6 s): each late duty rewrites the lines of the
    /// time it owes, so the panel is right within the period plus one late turn (before: 24
    /// lines a turn, 13 s).
    @Test func aLateLoopStillRewritesEveryLineWithinThePeriod() throws {
        var (driver, link, fb) = try Self.shown { fb in _ = fb.drawText("4:05:06", font: Font.digitsHuge2x, x: 10, y: 60) }
        let turnMs: Int64 = 1_300
        var t: Int64 = 10_000
        driver.refreshIfDue(atMs: t)
        t += turnMs
        driver.refreshIfDue(atMs: t)
        try driver.flushAll(bus: &link)
        link.port.powerLoss()
        let lost = t
        var repairedAt: Int64?
        let togglesBefore = driver.vcomToggles
        while repairedAt == nil, t <= lost + 3 * SharpMemoryDriver.rewritePeriodMs {
            t += turnMs
            driver.refreshIfDue(atMs: t)
            try driver.flushAll(bus: &link)
            if link.port.panelImage().bytes == fb.bytes { repairedAt = t }
        }
        let at = try #require(repairedAt, "repaired")
        #expect(at - lost <= SharpMemoryDriver.rewritePeriodMs + turnMs, "within \(SharpMemoryDriver.rewritePeriodMs + turnMs) ms: \(at - lost)")
        #expect(driver.vcomToggles - togglesBefore == Int((at - lost) / turnMs), "one flip a turn: VCOM is not made up")
    }

    /// After a link error the next steps clear the panel and send every line.
    @Test func reinitializeClearsAndResendsEverything() throws {
        var driver = SharpMemoryDriver(model: .ls013b7dh03)
        var link = SPIDisplayLink(port: SharpMemoryEmulator(model: .ls013b7dh03))
        try driver.start(bus: &link)
        var fb = Framebuffer(width: 128, height: 128)
        fb.fill(Rect(x: 3, y: 3, width: 50, height: 90))
        driver.present(&fb)
        try driver.flushAll(bus: &link)
        let before = (link.port.clears, link.port.linesWritten)
        link.port.powerLoss()
        driver.reinitialize()
        try driver.flushAll(bus: &link)
        #expect(link.port.clears == before.0 + 1)
        #expect(link.port.linesWritten == before.1 + 128)
        #expect(link.port.panelImage().bytes == fb.bytes)
    }

    /// With EXTMODE high the pin carries VCOM: no VCOM-only command goes out, and the level the
    /// owner is asked to put on the pin alternates every period.
    @Test func extcominCarriesVcomInsteadOfCommands() throws {
        var driver = SharpMemoryDriver(model: .ls013b7dh03, vcom: .extcomin)
        var link = SPIDisplayLink(port: RecordingSPI())
        try driver.start(bus: &link)
        link.port.transactions.removeAll()
        var levels: [Bool] = []
        var t: Int64 = 0
        while t <= 3_000 {
            if driver.refreshIfDue(atMs: t), let level = driver.dutyPinLevel { levels.append(level) }
            try driver.flushAll(bus: &link)
            t += 50
        }
        #expect(levels.count == 6)
        for i in 1..<levels.count { #expect(levels[i] != levels[i - 1]) }
        #expect(link.port.transactions.allSatisfy { $0[0] & SharpMemoryDriver.Command.writeLines != 0 }, "only the rewrite's line writes")
        #expect(SharpMemoryDriver(model: .ls013b7dh03).dutyPinLevel == nil, "serial VCOM has no pin")
        #expect(driver.dutyPeriodMs! * 2 <= SharpMemoryDriver.vcomPeriodMs, "called at least twice per VCOM period")
    }

    /// Lines per step keep a step's wire time within the budget at the panel's clock.
    @Test func stepsFitTheTimeBudgetAtTheClock() throws {
        #expect(SharpMemoryDriver.linesPerStep(width: 400, clockHz: 1_000_000) == 8)
        #expect(SharpMemoryDriver.linesPerStep(width: 400, clockHz: 2_000_000) == 16)
        #expect(SharpMemoryDriver.linesPerStep(width: 400, clockHz: 100_000) == 1)
        #expect(SharpMemoryDriver.linesPerStep(width: 128, clockHz: 1_000_000) == 16)
        for hz in [100_000, 500_000, 1_000_000, 2_000_000, 4_000_000] {
            let lines = SharpMemoryDriver.linesPerStep(width: 400, clockHz: hz)
            var driver = SharpMemoryDriver(model: .ls027b7dh01, linesPerStep: lines)
            var link = SPIDisplayLink(port: RecordingSPI())
            try driver.start(bus: &link)
            let longest = link.port.transactions.map(\.count).max()!
            let us = longest * 8 * 1_000_000 / hz
            #expect(us <= 3_500 || lines == 1, "\(hz) Hz: \(longest) bytes = \(us) µs")
        }
    }
}

extension SharpMemoryTests {
    /// Off (shutdown) is a cleared panel, and nothing pending or due later writes a line after
    /// the clear (the panel would show half a frame on a stopped device).
    @Test func offIsClearedAndNothingFollows() throws {
        var driver = SharpMemoryDriver(model: .ls013b7dh03)
        var link = SPIDisplayLink(port: SharpMemoryEmulator(model: .ls013b7dh03))
        try driver.start(bus: &link)
        var fb = Framebuffer(width: 128, height: 128)
        fb.fill(Rect(x: 0, y: 0, width: 128, height: 64))
        driver.present(&fb)
        try driver.flushStep(bus: &link)
        #expect(driver.hasPendingPages, "part of the frame still to go")
        try driver.setDisplayOn(false, bus: &link)
        #expect(!driver.hasPendingPages)
        driver.refreshIfDue(atMs: 0)
        driver.refreshIfDue(atMs: 600)
        try driver.flushAll(bus: &link)
        #expect(link.port.panelImage().bytes.allSatisfy { $0 == 0 }, "white")
    }
}
