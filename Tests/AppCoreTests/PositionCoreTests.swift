import AppCore
import Positioning
import RideModel
import Testing

/// Position and climbing in the app core (docs/gps.md): 1 Hz position records, a lost fix shown
/// as absent (never the last position) and alerted, the breadcrumb (also rebuilt by crash
/// recovery), the climbing metrics, the GPS clock and the GPS status.
@Suite struct PositionCoreTests {
    static let degPerM = 1 / 111_200.0

    struct Ride {
        var core = AppCore(randomSeed: 5)
        var records: [RideRecord] = []
        var alerts: [Alert] = []
        var now = MonotonicInstant.zero

        init() {
            handle(.sensor(SensorStatus(.gps, .connected), at: now))
            handle(.command(.start, at: now))
            tick(toMs: 3_000)
        }

        mutating func handle(_ i: AppInput) {
            core.handle(i)
            while let e = core.drainEffect() {
                switch e {
                case .journal(let r): records.append(r)
                case .alert(let a): alerts.append(a)
                default: break
                }
            }
        }

        mutating func tick(toMs ms: Int64) {
            now = MonotonicInstant(milliseconds: ms)
            handle(.tick(now))
        }

        /// A second of riding north at 6 m/s; with `fix` a position at +200 ms.
        mutating func second(_ k: Int, fix: Bool = true, altitude: Double? = nil) {
            let base = 3_000 + Int64(k) * 1000
            if fix {
                let at = MonotonicInstant(milliseconds: base + 200)
                handle(.sample(Sample(.latitude, 46 + Double(k) * 6 * PositionCoreTests.degPerM, at: at)))
                handle(.sample(Sample(.longitude, 7.0, at: at)))
                handle(.sample(Sample(.speed, 6, at: at)))
            }
            if let a = altitude { handle(.sample(Sample(.altitude, a, at: MonotonicInstant(milliseconds: base + 300)))) }
            tick(toMs: base + 1000)
        }

        func recorded(_ q: Quantity) -> [Sample] {
            records.compactMap { if case .sample(let s) = $0, s.quantity == q { s } else { nil } }
        }
    }

    @Test func positionsAreRecordedOnceASecondAndDrawnAsTheTrack() {
        var r = Ride()
        for k in 0..<60 { r.second(k) }
        #expect(r.recorded(.latitude).count == 60)
        #expect(r.recorded(.longitude).count == 60)
        #expect(r.core.screen.track.count > 50, "6 m apart, kept every 5 m")
        let b = r.core.screen.track.bounds!
        #expect(abs((b.maxNorthM - b.minNorthM) - 59 * 6) < 1)
    }

    /// The fix is lost for 10 s: the GPS role goes lost (an alert, like a lost sensor), no
    /// position is recorded in the gap (never the last one), the track breaks, and the fix
    /// coming back is alerted and resumes the records.
    @Test func aLostFixIsAbsentAlertedAndBreaksTheTrack() {
        var r = Ride()
        for k in 0..<10 { r.second(k) }
        let before = r.recorded(.latitude).count
        r.handle(.sensor(SensorStatus(.gps, .lost), at: MonotonicInstant(milliseconds: 13_050)))
        #expect(r.alerts.contains(.sensorLost(.gps)))
        for k in 10..<20 { r.second(k, fix: false) }
        #expect(r.recorded(.latitude).count == before, "no position while the fix is lost")
        r.handle(.sensor(SensorStatus(.gps, .connected), at: MonotonicInstant(milliseconds: 23_050)))
        #expect(r.alerts.contains(.sensorBack(.gps)))
        for k in 20..<30 { r.second(k) }
        #expect(r.recorded(.latitude).count == before + 10)
        let t = r.core.screen.track
        #expect((0..<t.count).filter { t.point($0).startsPiece }.count == 1, "one break, where the fix was lost")
    }

    /// Crash recovery replays the journal: the track on the screen is rebuilt exactly.
    @Test func recoveryRebuildsTheTrack() {
        var r = Ride()
        for k in 0..<40 { r.second(k, fix: k < 15 || k >= 25) }
        var fresh = AppCore(randomSeed: 9)
        for rec in r.records { fresh.replay(rec) }
        fresh.finishRecovery(deviceNow: MonotonicInstant(milliseconds: 500), gapMs: 60_000)
        #expect(fresh.screen.track == r.core.screen.track)
        #expect(fresh.screen.track.count > 20)
    }

    /// Altitude live; ascent is the ride's total (the builder's, from cumulative samples);
    /// grade live.
    @Test func climbingMetrics() {
        var r = Ride()
        for k in 0..<20 {
            let at = MonotonicInstant(milliseconds: 3_000 + Int64(k) * 1000 + 300)
            r.handle(.sample(Sample(.altitude, 400 + Double(k) * 0.5, at: at)))
            r.handle(.sample(Sample(.ascent, Double(k) * 0.5, at: at, origin: .generated)))
            r.handle(.sample(Sample(.grade, 8.3, at: at, origin: .generated)))
            r.tick(toMs: 3_000 + Int64(k) * 1000 + 1000)
        }
        #expect(r.core.screen[.altitude] == 409.5)
        #expect(r.core.screen[.grade] == 8.3)
        #expect(abs((r.core.screen[.ascent] ?? 0) - 9.5) < 0.21, "\(r.core.screen[.ascent] ?? -1)")
        // Stale altitude is "--".
        r.tick(toMs: 30_000)
        #expect(r.core.screen[.altitude] == nil)
    }

    @Test func gpsStatusAndClock() {
        var core = AppCore(randomSeed: 1)
        core.handle(.sensor(.gps(GpsStatus(mode: .fix3D, satellitesUsed: 9, satellitesVisible: 12), at: .zero)))
        #expect(core.screen.gps == GpsStatus(mode: .fix3D, satellitesUsed: 9, satellitesVisible: 12))
        // A board that booted at 1970 with no network: GPS time makes the clock trusted.
        core.handle(.wallClock(WallClockTime(unixMs: 5_000, trusted: false), at: .zero))
        let gpsTime = UTCDateTime.unixMs(year: 2026, month: 6, day: 6, hour: 7)
        core.handle(.sensor(.clock(WallClockTime(unixMs: gpsTime, trusted: true), at: MonotonicInstant(milliseconds: 1000))))
        core.handle(.command(.start, at: MonotonicInstant(milliseconds: 2000)))
        core.handle(.tick(MonotonicInstant(milliseconds: 5000)))
        // The ride starts at the end of the countdown (5 s), 4 s after the GPS time was read.
        #expect(core.header?.anchor.wall == WallClockTime(unixMs: gpsTime + 4000, trusted: true))
    }
}
