import AppCore
import RideModel
import Testing

/// A running ride's seconds with nothing to record (no sensor, or every one lost) are journaled
/// as `elapsed` records (docs/journal.md, type 9): crash recovery brings the timer back to the
/// last of them, not to the last sample (workout-model.md §5: durable at least once per second).
/// Found by the VM kill drill: a ride whose only sensor was lost recovered 0.5 s of a 3 s timer.
@Suite struct ElapsedRecordTests {
    struct Ride {
        var core = AppCore(randomSeed: 3)
        var records: [RideRecord] = []
        var now = MonotonicInstant.zero

        mutating func handle(_ i: AppInput) {
            core.handle(i)
            while let e = core.drainEffect() {
                if case .journal(let r) = e { records.append(r) }
            }
        }

        mutating func tick(toMs ms: Int64) {
            now = MonotonicInstant(milliseconds: ms)
            handle(.tick(now))
        }

        var elapsed: [Int64] { records.compactMap { if case .elapsed(let t) = $0 { t.milliseconds } else { nil } } }

        /// A fresh core that replayed the journal, re-attached 500 ms into the device's new boot.
        func recovered() -> AppCore {
            var fresh = AppCore(randomSeed: 4)
            for r in records { fresh.replay(r) }
            fresh.finishRecovery(deviceNow: MonotonicInstant(milliseconds: 500), gapMs: 0)
            fresh.handle(.tick(MonotonicInstant(milliseconds: 500)))
            return fresh
        }
    }

    @Test func aRideWithoutSensorsRecoversItsTimerToTheLastSecond() {
        var r = Ride()
        r.handle(.command(.start, at: .zero))
        for s in 1...40 { r.tick(toMs: Int64(s) * 1000 + 7) }
        let timer = r.core.screen.timerMs // after the countdown
        #expect(timer >= 35_000, "\(timer)")
        #expect(r.records.allSatisfy { if case .sample = $0 { false } else { true } }, "nothing to count")
        #expect(Int64(r.elapsed.count) >= timer / 1000 - 1, "one elapsed record a second: \(r.elapsed.count) for \(timer) ms")
        #expect(r.elapsed == r.elapsed.sorted() && Set(r.elapsed).count == r.elapsed.count, "one per record instant, in order")
        let fresh = r.recovered()
        #expect(fresh.state == .running)
        #expect(fresh.screen.timerMs >= timer - 1000, "recovered \(fresh.screen.timerMs) ms of \(timer) ms")
        #expect(fresh.screen.timerMs <= timer, "never more than was ridden")
    }

    /// The seconds of a pause add nothing to the timer: no elapsed record while paused; the
    /// recovered ride is paused with the timer it had.
    @Test func aPausedRideJournalsNoElapsedRecords() {
        var r = Ride()
        r.handle(.command(.start, at: .zero))
        for s in 1...10 { r.tick(toMs: Int64(s) * 1000 + 7) }
        r.handle(.command(.pause, at: MonotonicInstant(milliseconds: 10_500)))
        let countAtPause = r.elapsed.count
        let timer = r.core.screen.timerMs
        for s in 11...30 { r.tick(toMs: Int64(s) * 1000 + 7) }
        #expect(r.elapsed.count == countAtPause, "paused: \(r.elapsed.suffix(3))")
        let fresh = r.recovered()
        #expect(fresh.state == .paused)
        #expect(fresh.screen.timerMs == timer, "\(fresh.screen.timerMs) vs \(timer)")
    }

    /// A second with a value carries its instant in the sample: no elapsed record beside it.
    @Test func aSecondWithASampleNeedsNoElapsedRecord() {
        var r = Ride()
        r.handle(.sensor(SensorStatus(.heartRate, .connected), at: .zero))
        r.handle(.command(.start, at: .zero))
        for s in 1...20 {
            r.handle(.sample(Sample(.heartRate, 120, at: MonotonicInstant(milliseconds: Int64(s) * 1000 - 300))))
            r.tick(toMs: Int64(s) * 1000 + 7)
        }
        let samples = r.records.filter { if case .sample = $0 { true } else { false } }.count
        #expect(samples >= 15, "\(samples)")
        #expect(r.elapsed.count <= 1, "only a second without a fresh value: \(r.elapsed)")
        // The sensor is lost: the seconds after it are elapsed records, and recovery keeps them.
        r.handle(.sensor(SensorStatus(.heartRate, .lost), at: MonotonicInstant(milliseconds: 20_100)))
        for s in 21...35 { r.tick(toMs: Int64(s) * 1000 + 7) }
        #expect(r.elapsed.count >= 14, "\(r.elapsed.count)")
        let timer = r.core.screen.timerMs
        #expect(r.recovered().screen.timerMs >= timer - 1000)
    }
}
