import Testing
@testable import AppCore
import RideModel
import Sensors

/// One place decides what a wall-clock reading changes, whether it is the kernel's (trusted
/// while NTP keeps it synchronised) or a GPS fix's time: the same readings from either source
/// have the same effect on the anchor, the ride's journal and the `clockTrusted` announcement
/// (docs/journal.md, "The clock").
struct WallClockTests {
    enum Source: CaseIterable { case kernel, gps }

    static func read(_ core: inout AppCore, _ w: WallClockTime, atMs t: Int64, from source: Source) -> [AppEffect] {
        let at = MonotonicInstant(milliseconds: t)
        switch source {
        case .kernel: core.handle(.wallClock(w, at: at))
        case .gps: core.handle(.sensor(.clock(w, at: at)))
        }
        var out: [AppEffect] = []
        while let e = core.drainEffect() { out.append(e) }
        return out
    }

    static let trueMs: Int64 = 1_790_000_000_000
    static func trusted(_ ms: Int64) -> WallClockTime { WallClockTime(unixMs: ms, trusted: true) }

    static func announced(_ effects: [AppEffect]) -> [WallClockAnchor] {
        effects.compactMap { if case .clockTrusted(let a) = $0 { a } else { nil } }
    }

    static func journaledAnchors(_ effects: [AppEffect]) -> [WallClockAnchor] {
        effects.compactMap { if case .journal(.wallClock(let a)) = $0 { a } else { nil } }
    }

    @Test func bothSourcesGoThroughTheSameRules() {
        for source in Source.allCases {
            var core = AppCore(randomSeed: 1)
            // Booted on a stale clock: untrusted, nothing announced.
            #expect(Self.announced(Self.read(&core, WallClockTime(unixMs: 5_000, trusted: false), atMs: 0, from: .kernel)).isEmpty)
            // The first trusted reading: announced once, with its monotonic instant.
            let first = Self.read(&core, Self.trusted(Self.trueMs), atMs: 10_000, from: source)
            #expect(Self.announced(first) == [WallClockAnchor(monotonic: MonotonicInstant(milliseconds: 10_000), wall: Self.trusted(Self.trueMs))],
                    "\(source)")
            // Behind the prediction: ignored (never back). Within 2 s: kept. Ahead: moved forward.
            // None is announced again.
            #expect(Self.read(&core, Self.trusted(Self.trueMs + 10_000 - 60_000), atMs: 20_000, from: source).isEmpty)
            #expect(core.wallAnchor?.wall.unixMs == Self.trueMs)
            #expect(Self.read(&core, Self.trusted(Self.trueMs + 20_000 + 1_500), atMs: 30_000, from: source).isEmpty)
            #expect(core.wallAnchor?.wall.unixMs == Self.trueMs)
            #expect(Self.read(&core, Self.trusted(Self.trueMs + 30_000 + 5_000), atMs: 30_000, from: source).isEmpty)
            #expect(core.wallAnchor == WallClockAnchor(monotonic: MonotonicInstant(milliseconds: 30_000), wall: Self.trusted(Self.trueMs + 35_000)))
            // An untrusted reading after that changes nothing.
            #expect(Self.read(&core, WallClockTime(unixMs: 0, trusted: false), atMs: 40_000, from: .kernel).isEmpty)
            #expect(core.wallAnchor?.wall.trusted == true)
        }
    }

    /// During a ride, the first trusted reading is journaled (the ride's file dates every record
    /// by it) and announced; after the ride only announced. A board that boots trusted announces
    /// at its first reading, so a start of the app that finds the clock already set dates the
    /// rides waiting for it.
    @Test func duringARideTheTrustedAnchorIsJournaled() {
        for source in Source.allCases {
            var core = AppCore(randomSeed: 2)
            _ = Self.read(&core, WallClockTime(unixMs: 5_000, trusted: false), atMs: 0, from: .kernel)
            core.handle(.command(.start, at: MonotonicInstant(milliseconds: 1_000)))
            core.handle(.tick(MonotonicInstant(milliseconds: 4_000)))
            #expect(core.state == .running)
            while core.drainEffect() != nil {}
            let effects = Self.read(&core, Self.trusted(Self.trueMs), atMs: 9_000, from: source)
            #expect(Self.journaledAnchors(effects) == [WallClockAnchor(monotonic: MonotonicInstant(milliseconds: 9_000), wall: Self.trusted(Self.trueMs))])
            #expect(Self.announced(effects).count == 1)
        }
        var trustedAtBoot = AppCore(randomSeed: 3)
        #expect(Self.announced(Self.read(&trustedAtBoot, Self.trusted(Self.trueMs), atMs: 0, from: .kernel)).count == 1)
    }
}
