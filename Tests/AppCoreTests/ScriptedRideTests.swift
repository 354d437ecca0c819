import Testing
@testable import AppCore
import RideModel

/// Drives the app core through a scripted ride and checks the exact screens and records.
struct ScriptedRideTests {
    struct Harness {
        var core = AppCore(configuration: AppConfiguration(), randomSeed: 42)
        var modes: [ScreenMode] = []
        var effects: [AppEffect] = []

        mutating func feed(_ input: AppInput) {
            core.handle(input)
            while let e = core.drainEffect() { effects.append(e) }
            if modes.last != core.screen.mode { modes.append(core.screen.mode) }
        }
        mutating func press(_ b: Button, at ms: Int64, holdMs: Int64 = 100) {
            feed(.button(ButtonEvent(b, .down, at: MonotonicInstant(milliseconds: ms))))
            feed(.button(ButtonEvent(b, .up, at: MonotonicInstant(milliseconds: ms + holdMs))))
        }
        mutating func tick(_ ms: Int64) { feed(.tick(MonotonicInstant(milliseconds: ms))) }
        mutating func sample(_ q: Quantity, _ v: Double, at ms: Int64) {
            feed(.sample(Sample(q, v, at: MonotonicInstant(milliseconds: ms))))
        }
        /// Journal records since index `from`.
        func records(from: Int = 0) -> [RideRecord] {
            effects[from...].compactMap { if case .journal(let r) = $0 { r } else { nil } }
        }
        var lastReply: CommandReply? {
            effects.reversed().compactMap { if case .reply(let r) = $0 { r } else { nil } }.first
        }
    }

    /// Samples every 250 ms and ticks every second over [from, to).
    static func ride(_ h: inout Harness, from: Int64, to: Int64) {
        var t = from
        while t < to {
            h.sample(.power, 200, at: t)
            h.sample(.heartRate, 140, at: t)
            h.sample(.speed, 9, at: t)
            h.sample(.distance, Double(t) / 100, at: t)
            if t % 1000 == 0 { h.tick(t) }
            t += 250
        }
    }

    static func runScript() -> Harness {
        var h = Harness()
        for role in SensorRole.allCases { h.feed(.sensor(SensorStatus(role, .connected), at: .zero)) }
        h.press(.startPause, at: 0)            // idle → countdown
        h.tick(1_000); h.tick(2_000)
        ride(&h, from: 3_000, to: 10_000)      // running from 3 000
        h.press(.startPause, at: 10_000)       // pause (acts on press)
        h.tick(11_000)
        h.press(.startPause, at: 15_000)       // resume on release at 15 100
        ride(&h, from: 16_000, to: 20_000)
        h.press(.lap, at: 20_000)              // lap
        ride(&h, from: 20_250, to: 25_000)
        h.press(.startPause, at: 25_000)       // pause
        h.feed(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: 26_000))))
        h.tick(27_500)                          // long press fires at 27 500: end and save
        h.feed(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: 27_800))))
        h.press(.lap, at: 30_000)              // dismiss the summary
        return h
    }

    @Test func screenSequence() {
        let h = Self.runScript()
        #expect(h.modes == [.idle, .countdown(3), .countdown(2), .countdown(1), .running(page: 0), .paused,
                            .running(page: 0), .paused, .summary(page: 0), .idle])
    }

    @Test func recordsAndDurability() {
        let h = Self.runScript()
        let events = h.records().compactMap { if case .event(let e) = $0 { e } else { nil } }
        #expect(events.map(\.kind) == [.start, .pause, .resume, .lap, .pause, .stop])
        #expect(events.map(\.instant.milliseconds) == [3_000, 10_000, 15_100, 20_000, 25_000, 27_500])
        // Every state-changing record is followed by a sync before any further record.
        for (i, e) in h.effects.enumerated() {
            guard case .journal(let r) = e, r.mustBeDurableAtOnce else { continue }
            let rest = h.effects[(i + 1)...]
            let nextSync = rest.firstIndex { if case .syncJournal = $0 { true } else { false } }
            let nextSample = rest.firstIndex { if case .journal(.sample) = $0 { true } else { false } }
            #expect(nextSync != nil)
            if let s = nextSample, let y = nextSync { #expect(y < s, "sync must come before the next sample") }
        }
        // 1 Hz samples exactly at start + k s (the first at the start itself) while running or
        // paused, none after the stop; between records only counter readings (distance,
        // energy) at a pause, resume or stop instant.
        let eventTimes = Set(events.map(\.instant.milliseconds))
        let samples = h.records().compactMap { if case .sample(let s) = $0 { s } else { nil } }
        for s in samples {
            let t = s.instant.milliseconds
            let onGrid = (t - 3_000) % 1_000 == 0
            #expect(t >= 3_000 && t <= 27_500, "sample at \(t)")
            #expect(onGrid || (s.quantity.isCumulative && eventTimes.contains(t)), "\(s.quantity) at \(t) is neither a record nor a counter reading at an event")
        }
        let sampleTimes = Set(samples.map(\.instant.milliseconds))
        #expect(sampleTimes.contains(3_000) && sampleTimes.contains(4_000) && sampleTimes.contains(9_000))
        guard case .header(let header) = h.records().first else { Issue.record("first record must be the header"); return }
        #expect(header.anchor.monotonic.milliseconds == 3_000)
        #expect(h.records().contains(.finished(saved: true, at: MonotonicInstant(milliseconds: 27_500))))
        #expect(h.effects.contains(.rideFinished(header.rideID, saved: true)))
    }

    @Test func summaryFigures() throws {
        let h = Self.runScript()
        let s = try #require(h.core.summary)
        #expect(s.timerTimeMs == (10_000 - 3_000) + (25_000 - 15_100))
        #expect(s.elapsedTimeMs == 27_500 - 3_000)
        #expect(s.lapCount == 2)
        #expect(s.averagePowerW == 200)
        #expect(s.maxHeartRate == 140)
        #expect(s.saved == true)
    }

    @Test func sameInputsSameOutputs() {
        let a = Self.runScript(), b = Self.runScript()
        #expect(a.effects == b.effects)
        #expect(a.modes == b.modes)
    }

    @Test func startWhileRidingIsRefusedWithReason() {
        var h = Harness()
        h.feed(.command(.start, at: .zero))
        #expect(h.lastReply?.ok == true)
        h.tick(3_000)
        #expect(h.core.state == .running)
        h.feed(.command(.start, at: MonotonicInstant(milliseconds: 4_000)))
        let reply = h.lastReply
        #expect(reply?.ok == false)
        #expect(reply?.message.contains("ride already in progress") == true)
        #expect(h.core.state == .running)
        #expect(h.core.screen.overlay == .rideInProgress)
        h.feed(.command(.pause, at: MonotonicInstant(milliseconds: 5_000)))
        h.feed(.command(.start, at: MonotonicInstant(milliseconds: 6_000)))
        #expect(h.lastReply?.ok == false)
        #expect(h.core.state == .paused)
        h.feed(.command(.resume, at: MonotonicInstant(milliseconds: 7_000)))
        h.feed(.command(.resume, at: MonotonicInstant(milliseconds: 8_000)))
        #expect(h.lastReply?.ok == false, "resume while running is refused")
        #expect(h.lastReply?.message.contains("cannot resume while running") == true)
    }

    @Test func countdownCanBeCancelled() {
        var h = Harness()
        h.press(.startPause, at: 0)
        h.tick(1_000)
        h.press(.startPause, at: 1_500)
        #expect(h.core.state == .idle)
        h.tick(3_500)
        #expect(h.core.state == .idle, "a cancelled countdown never starts the ride")
        #expect(h.records().isEmpty)
    }

    @Test func staleMetricShowsNoValueNotZeroOrLast() {
        var h = Harness()
        h.feed(.command(.start, at: .zero))
        h.tick(3_000)
        h.sample(.heartRate, 150, at: 3_500)
        h.tick(4_000)
        #expect(h.core.screen[.heartRate] == 150)
        h.tick(6_000)
        #expect(h.core.screen[.heartRate] == 150)
        h.tick(6_600)
        #expect(h.core.screen[.heartRate] == nil, "3.1 s after the last value it must show --")
        #expect(h.core.screen[.power] == nil, "never seen: --")
        #expect(h.core.screen.timerMs == 3_600)
    }

    @Test func longPressDeadlineIsAnnounced() {
        var h = Harness()
        h.feed(.command(.start, at: .zero))
        h.tick(3_000)
        h.press(.startPause, at: 4_000)
        #expect(h.core.state == .paused)
        h.feed(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: 5_000))))
        h.tick(5_000)
        h.tick(6_000)
        #expect(h.core.nextDeadline == MonotonicInstant(milliseconds: 6_500), "the long-press deadline comes before the next record at 7 000")
        h.tick(6_499)
        #expect(h.core.state == .paused)
        h.tick(6_500)
        #expect(h.core.state == .ended, "held 1.5 s while paused: end and save")
        #expect(h.records().contains(.finished(saved: true, at: MonotonicInstant(milliseconds: 6_500))))
    }

    @Test func shortPressWhilePausedResumesOnRelease() {
        var h = Harness()
        h.feed(.command(.start, at: .zero))
        h.tick(3_000)
        h.press(.startPause, at: 4_000)
        h.feed(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: 5_000))))
        #expect(h.core.state == .paused, "while paused, the press waits for release (it may become a long press)")
        h.feed(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: 5_400))))
        #expect(h.core.state == .running, "a short press while paused resumes")
    }

    @Test func discardFromSummaryAsksFirst() {
        var h = Self.runScriptUntilSummary()
        h.feed(.button(ButtonEvent(.lap, .down, at: MonotonicInstant(milliseconds: 30_000))))
        h.tick(31_600)
        #expect(h.core.screen.mode == .confirmDiscard)
        h.feed(.button(ButtonEvent(.lap, .up, at: MonotonicInstant(milliseconds: 31_700))))
        #expect(h.core.screen.mode == .confirmDiscard, "releasing the long press does not answer the question")
        h.press(.startPause, at: 32_000)
        #expect(h.core.summary?.saved == false)
        #expect(h.effects.contains { if case .rideDeleted = $0 { true } else { false } })
    }

    static func runScriptUntilSummary() -> Harness {
        var h = Harness()
        h.feed(.command(.start, at: .zero))
        ride(&h, from: 3_000, to: 8_000)
        h.feed(.command(.end, at: MonotonicInstant(milliseconds: 8_000)))
        return h
    }

    @Test func replayRebuildsTheRide() {
        let h = Self.runScript()
        var fresh = AppCore(configuration: AppConfiguration(), randomSeed: 0)
        // Replay everything up to (not including) the stop: the ride comes back paused.
        let records = h.records()
        let stopIndex = records.firstIndex { if case .event(let e) = $0 { e.kind == .stop } else { false } }!
        for r in records[..<stopIndex] { fresh.replay(r) }
        #expect(fresh.state == .paused)
        let stopAt = MonotonicInstant(milliseconds: 27_500)
        let b = fresh.builder!
        #expect(b.timerTimeMs(at: stopAt) == (10_000 - 3_000) + (25_000 - 15_100))
        #expect(b.laps.count == 2)
        #expect(b.ride[.power].average == 200)
        fresh.finishRecovery(deviceNow: MonotonicInstant(milliseconds: 500), gapMs: 2_000)
        #expect(fresh.recovered)
        #expect(fresh.screen.overlay == .rideRecovered)
        #expect(fresh.screen.mode == .paused)
    }
}
