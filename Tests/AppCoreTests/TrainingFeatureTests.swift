import TestSupport
import Testing
@testable import AppCore
import RideModel
import Training

/// Zones for one ride, live zone updates, target alerts, auto-pause and auto-lap through the app
/// core, and crash recovery rebuilding them.
struct TrainingFeatureTests {
    struct Harness {
        var core: AppCore
        var effects: [AppEffect] = []

        init(_ configuration: AppConfiguration = AppConfiguration()) {
            core = AppCore(configuration: configuration, randomSeed: 7)
        }

        mutating func feed(_ input: AppInput) {
            core.handle(input)
            while let e = core.drainEffect() { effects.append(e) }
        }
        mutating func command(_ c: ControlCommand, at ms: Int64) { feed(.command(c, at: MonotonicInstant(milliseconds: ms))) }
        mutating func tick(_ ms: Int64) { feed(.tick(MonotonicInstant(milliseconds: ms))) }
        mutating func sample(_ q: Quantity, _ v: Double, at ms: Int64) { feed(.sample(Sample(q, v, at: MonotonicInstant(milliseconds: ms)))) }
        /// Starts a ride by command at 0: it runs from 3 000.
        mutating func startRide() {
            command(.start, at: 0)
            tick(1_000); tick(2_000); tick(3_000)
        }
        var records: [RideRecord] { effects.compactMap { if case .journal(let r) = $0 { r } else { nil } } }
        var events: [RideEvent] { records.compactMap { if case .event(let e) = $0 { e } else { nil } } }
        var alerts: [Alert] { effects.compactMap { if case .alert(let a) = $0 { a } else { nil } } }
        var zoneUpdates: [ZoneUpdate] { effects.compactMap { if case .zoneUpdate(let u) = $0 { u } else { nil } } }
        var lastReply: CommandReply? { effects.reversed().compactMap { if case .reply(let r) = $0 { r } else { nil } }.first }
        func metadata(_ key: String) -> String? {
            records.reversed().compactMap { if case .metadata(let k, let v) = $0, k == key { v } else { nil } }.first
        }
        var header: RideHeader? { records.reversed().compactMap { if case .header(let h) = $0 { h } else { nil } }.first }
    }

    /// Feeds `values(t)` every 250 ms over [from, to) and ticks on every whole second.
    static func ride(_ h: inout Harness, from: Int64, to: Int64, _ values: (Int64) -> [(Quantity, Double)]) {
        var t = from
        while t < to {
            for (q, v) in values(t) { h.sample(q, v, at: t) }
            if t % 1000 == 0 { h.tick(t) }
            t += 250
        }
    }

    // MARK: Custom zones

    @Test func customZonesApplyToOneRideOnly() throws {
        var h = Harness()
        let custom = try ZoneConfiguration(quantity: .heartRate, boundaries: [100, 120, 140])
        h.command(.setRideZones(custom), at: 0)
        #expect(h.lastReply?.ok == true)
        h.startRide()
        #expect(h.header?.settings.heartRateZones == custom)
        #expect(h.core.builder?.settings.heartRateZones == custom)
        #expect(h.metadata(AppCore.heartRateZonesSourceKey) == "custom")
        let other = try ZoneConfiguration(quantity: .heartRate, boundaries: [90, 100])
        h.command(.setRideZones(other), at: 4_000)
        #expect(h.lastReply?.ok == false)
        #expect(h.lastReply?.message.contains("before starting") == true)
        #expect(h.core.builder?.settings.heartRateZones == custom, "a running ride keeps its zones")
        Self.ride(&h, from: 4_000, to: 8_000) { _ in [(.heartRate, 130)] }
        h.command(.end, at: 8_000)
        #expect(h.core.summary?.heartRateZones == custom)
        #expect(h.core.summary?.heartRateZoneTimes.values == [0, 0, 4_000, 0], "130 bpm is Z3 of 100/120/140 from 4 s to 8 s")
        // The next ride is back on the preferred zones; the preferred zones never changed.
        h.command(.dismiss, at: 9_000)
        h.command(.start, at: 10_000)
        h.tick(11_000); h.tick(12_000); h.tick(13_000)
        #expect(h.core.state == .running)
        #expect(h.header?.settings.heartRateZones == .defaultHeartRate)
        #expect(h.metadata(AppCore.heartRateZonesSourceKey) == "preferred")
        #expect(h.core.configuration.ride.heartRateZones == .defaultHeartRate)
    }

    @Test func targetsMustFitTheZones() throws {
        var h = Harness()
        h.command(.setTargetZone(TargetZone(quantity: .power, zone: 2)), at: 0)
        #expect(h.lastReply?.ok == false, "no power zones configured")
        #expect(h.lastReply?.message.contains("FTP") == true)
        h.command(.setTargetZone(TargetZone(quantity: .heartRate, zone: 4)), at: 0)
        #expect(h.lastReply?.ok == true)
        // Custom zones with fewer zones turn the now-impossible target off, and say so.
        h.command(.setRideZones(try ZoneConfiguration(quantity: .heartRate, boundaries: [120])), at: 0)
        #expect(h.lastReply?.message.contains("turned off") == true)
        #expect(h.core.training.heartRateTarget == nil)
    }

    // MARK: Auto-pause

    @Test func autoPauseAndResumeOnASpeedTrace() throws {
        var h = Harness(AppConfiguration(training: TrainingSettings(autoPause: AutoPauseSettings())))
        h.startRide()
        // 8 m/s until 10 s, 0.3 m/s (1 km/h) until 20 s, 8 m/s until 30 s.
        Self.ride(&h, from: 3_000, to: 30_000) { t in [(.speed, t < 10_000 || t >= 20_000 ? 8 : 0.3)] }
        h.command(.end, at: 30_000)
        let e = h.events
        #expect(e.map(\.kind) == [.start, .pause, .resume, .stop])
        #expect(e.map(\.instant.milliseconds) == [3_000, 15_000, 20_000, 30_000], "slow from the 10 s record, paused 5 s later")
        #expect(e[1].trigger == .auto && e[2].trigger == .auto, "recorded as auto, not manual")
        let summary = try #require(h.core.summary)
        let timer: Int64 = (15_000 - 3_000) + (30_000 - 20_000)
        #expect(summary.timerTimeMs == timer)
    }

    @Test func autoPauseIsOffByDefault() {
        var h = Harness()
        h.startRide()
        Self.ride(&h, from: 3_000, to: 30_000) { _ in [(.speed, 0)] }
        #expect(h.core.state == .running)
        #expect(h.events.map(\.kind) == [.start])
    }

    @Test func manualPauseIsNotAutoResumed() {
        var h = Harness(AppConfiguration(training: TrainingSettings(autoPause: AutoPauseSettings())))
        h.startRide()
        Self.ride(&h, from: 3_000, to: 6_000) { _ in [(.speed, 8)] }
        h.command(.pause, at: 6_000)
        Self.ride(&h, from: 6_000, to: 12_000) { _ in [(.speed, 8)] }
        #expect(h.core.state == .paused)
    }

    // MARK: Auto-lap

    @Test func autoLapByDistance() {
        var h = Harness(AppConfiguration(training: TrainingSettings(autoLap: AutoLapSettings(everyDistanceM: 100))))
        h.startRide()
        // 10 m/s; the first reading (the record of 4 s: the samples begin after the start's
        // record at 3 s) is the distance baseline, so the lap reaches 100 m at 14 s.
        Self.ride(&h, from: 3_000, to: 35_000) { t in [(.speed, 10), (.distance, Double(t - 3_000) / 100)] }
        let laps = h.events.filter { $0.kind == .lap }
        #expect(laps.map(\.instant.milliseconds) == [14_000, 24_000, 34_000])
        #expect(laps.allSatisfy { $0.trigger == .distance })
        let b = h.core.builder!
        #expect(b.laps.dropLast().allSatisfy { $0.statistics.distanceM == 100 && $0.trigger == .distance })
    }

    /// 7.3 m/s with 100 m laps: each lap overshoots its mark by up to a record's worth; the next
    /// lap ends on the next true mark (200, 300, 400 m of the ride), not 100 m after the
    /// overshoot (which drifted: the 4th lap came at 408.8 m). Failed before the fix.
    @Test func distanceLapsStayOnTheTrueMarks() {
        var h = Harness(AppConfiguration(training: TrainingSettings(autoLap: AutoLapSettings(everyDistanceM: 100))))
        h.startRide()
        Self.ride(&h, from: 3_000, to: 120_000) { t in [(.speed, 7.3), (.distance, Double(t - 3_000) / 1000 * 7.3)] }
        let laps = h.events.filter { $0.kind == .lap }.map(\.instant.milliseconds)
        // The first record at or past each mark: the baseline is the record of 4 s, so the ride's
        // distance at record k (k s after it) is 7.3 k.
        var expected: [Int64] = []
        var mark = 100.0
        for k in 1...115 where 7.3 * Double(k) >= mark - 1e-9 {
            expected.append(4_000 + Int64(k) * 1_000)
            mark += 100
        }
        #expect(laps == expected, "laps at \(laps), expected \(expected)")
    }

    @Test func autoLapByTimeCountsTimerTimeOnly() {
        var h = Harness(AppConfiguration(training: TrainingSettings(autoLap: AutoLapSettings.minutes(1))))
        h.startRide()
        Self.ride(&h, from: 3_000, to: 10_000) { _ in [(.speed, 8)] }
        h.command(.pause, at: 10_000)
        Self.ride(&h, from: 10_000, to: 15_500) { _ in [(.speed, 8)] }
        h.command(.resume, at: 15_500)
        Self.ride(&h, from: 15_500, to: 140_000) { _ in [(.speed, 8)] }
        // lap timer = 7 s + (T − 15.5 s) ≥ 60 s ⇒ T ≥ 68.5 s ⇒ the record at 69 s; the next lap
        // runs 60 s of timer time from 69 s ⇒ 129 s.
        let laps = h.events.filter { $0.kind == .lap }
        #expect(laps.map(\.instant.milliseconds) == [69_000, 129_000])
        #expect(laps.allSatisfy { $0.trigger == .time })
    }

    // MARK: Target alerts

    @Test func targetAlertOncePerExcursion() {
        var h = Harness(AppConfiguration(training: TrainingSettings(heartRateTarget: TargetZone(quantity: .heartRate, zone: 2))))
        h.startRide()
        // Z3 is 114–136. In zone, then 150 from 10 s to 40 s, then back.
        Self.ride(&h, from: 3_000, to: 60_000) { t in [(.heartRate, t >= 10_000 && t < 40_000 ? 150 : 125)] }
        #expect(h.alerts == [.zoneDrift(.heartRate, above: true), .backInZone(.heartRate)])
        #expect(h.core.screen.heartRateTargetZone == 2)
        // The drift came at 20 s (10 s grace from the first out record at 10 s).
        let driftIndex = h.effects.firstIndex { $0 == .alert(.zoneDrift(.heartRate, above: true)) }!
        let lastSampleBefore = h.effects[..<driftIndex].compactMap { if case .journal(.sample(let s)) = $0 { s.instant.milliseconds } else { nil } }.last
        #expect(lastSampleBefore == 20_000)
    }

    @Test func targetSetDuringTheRideIsJournaled() {
        var h = Harness()
        h.startRide()
        Self.ride(&h, from: 3_000, to: 6_000) { _ in [(.heartRate, 100)] }
        h.command(.setTargetZone(TargetZone(quantity: .heartRate, zone: 2, graceMs: 2_000)), at: 6_100)
        #expect(h.lastReply?.ok == true)
        #expect(h.metadata(TrainingSettings.heartRateTargetKey) == "zone=3,grace_ms=2000,hysteresis=3")
        Self.ride(&h, from: 6_250, to: 12_000) { _ in [(.heartRate, 100)] }
        #expect(h.alerts == [.zoneDrift(.heartRate, above: false)])
        // Pausing forgets the excursion; the target stays.
        h.command(.pause, at: 12_100)
        #expect(h.core.targetMonitor(.heartRate)?.state == .unknown)
    }

    // MARK: Live zone updates (property test)

    /// Random heart-rate traces with dropouts, random pauses and laps: the live zone updates come
    /// exactly at the records where the current zone changes, carrying exactly the ride and lap
    /// time in zone computed the slow way from the journal; time in zones sums to the timer time
    /// in which heart rate had data, and paused time never counts.
    @Test func zoneUpdatesAndTimesMatchABruteForceModel() {
        for seed in UInt64(1)...25 {
            var rng = SeededRandom(seed: seed)
            var h = Harness()
            h.startRide()
            var t: Int64 = 3_000
            var running = true
            var hr = Double.random(in: 80...170, using: &rng)
            var dropoutUntil: Int64 = 0
            let end = Int64.random(in: 60...240, using: &rng) * 1_000
            while t < end {
                if t % 1000 == 130 && Int.random(in: 0..<25, using: &rng) == 0 {
                    if running && Bool.random(using: &rng) { h.command(.lap, at: t) } else {
                        h.command(running ? .pause : .resume, at: t)
                        running.toggle()
                    }
                }
                if t % 250 == 0 {
                    if t >= dropoutUntil, Int.random(in: 0..<120, using: &rng) == 0 {
                        dropoutUntil = t + Int64.random(in: 2...12, using: &rng) * 1_000
                    }
                    hr = min(200, max(60, hr + Double.random(in: -6...6, using: &rng)))
                    if t >= dropoutUntil { h.sample(.heartRate, hr.rounded(), at: t) }
                    h.sample(.speed, 7, at: t) // every record has a sample
                    if t % 1000 == 0 { h.tick(t) }
                }
                t += 10
            }
            h.command(.end, at: end)
            check(h, seed: seed)
        }
    }

    func check(_ h: Harness, seed: UInt64) {
        let zones = ZoneConfiguration.defaultHeartRate
        // The hold rule (docs/statistics.md): a value counts until the next value within the
        // hold limit H, else for one record period P; at a pause, stop or lap edge within H it
        // counts up to the edge.
        let hold = RideSettings.defaultSampleHoldLimitMs, period = RideSettings.defaultSamplePeriodMs
        let records = h.records
        var stretches: [(Int64, Int64)] = []
        var lapStarts: [Int64] = []
        var openFrom: Int64?
        for case .event(let e) in records {
            let ms = e.instant.milliseconds
            switch e.kind {
            case .start: openFrom = ms; lapStarts.append(ms)
            case .resume: openFrom = ms
            case .pause, .stop: if let a = openFrom { stretches.append((a, ms)) }; openFrom = nil
            case .lap: lapStarts.append(ms)
            default: break
            }
        }
        let hrSamples = records.compactMap { r -> (Int64, Double)? in
            if case .sample(let s) = r, s.quantity == .heartRate { return (s.instant.milliseconds, s.value) }
            return nil
        }
        let recordInstants = Array(Set(records.compactMap { r -> Int64? in if case .sample(let s) = r { s.instant.milliseconds } else { nil } })).sorted()
        // Counted segments [from, to) with their zone.
        var segments: [(Int64, Int64, Int)] = []
        for (a, b) in stretches {
            let inside = hrSamples.filter { $0.0 >= a && $0.0 < b }
            for (i, s) in inside.enumerated() {
                let to: Int64
                if i + 1 < inside.count, inside[i + 1].0 <= s.0 + hold {
                    to = inside[i + 1].0
                } else if b <= s.0 + hold {
                    to = b
                } else {
                    let edge = lapStarts.filter { $0 > s.0 && $0 <= s.0 + hold && $0 < b }.max() ?? s.0
                    to = max(s.0 + period, edge)
                }
                if to > s.0 { segments.append((s.0, to, zones.zone(of: s.1))) }
            }
        }
        func times(upTo x: Int64, from lo: Int64 = .min) -> [Int64] {
            var z = [Int64](repeating: 0, count: zones.zoneCount)
            for (a, b, zone) in segments {
                let from = max(a, lo), to = min(b, x)
                if to > from { z[zone] += to - from }
            }
            return z
        }
        func zoneAt(_ t: Int64) -> Int?? { // nil: not running; .some(nil): no current zone
            guard let stretch = stretches.first(where: { t >= $0.0 && t < $0.1 }) else { return nil }
            let a = stretch.0
            guard let s = hrSamples.last(where: { $0.0 >= a && $0.0 <= t }), t <= s.0 + hold else { return .some(nil) }
            return .some(zones.zone(of: s.1))
        }
        var expected: [(Int64, Int?, Int?, [Int64], [Int64])] = []
        var previous: Int?
        for t in recordInstants {
            guard let current = zoneAt(t) else { continue }
            if current != previous {
                let lapStart = lapStarts.last { $0 <= t } ?? 0
                expected.append((t, current, previous, times(upTo: t), times(upTo: t, from: lapStart)))
                previous = current
            }
        }
        let got = h.zoneUpdates.filter { $0.quantity == .heartRate }
        #expect(got.count == expected.count, "seed \(seed): \(got.count) updates, expected \(expected.count)")
        for (u, e) in zip(got, expected) {
            #expect(u.lastSampleInstant.milliseconds == e.0, "seed \(seed)")
            #expect(u.zone == e.1 && u.previousZone == e.2, "seed \(seed) at \(e.0): \(String(describing: u.zone)) from \(String(describing: u.previousZone)), expected \(String(describing: e.1)) from \(String(describing: e.2))")
            #expect(u.rideZoneTimes.values == e.3, "seed \(seed) at \(e.0): ride times")
            #expect(u.lapZoneTimes.values == e.4, "seed \(seed) at \(e.0): lap times")
        }
        // Final: time in zones = timer time with heart-rate data; never more than timer time.
        guard let s = h.core.summary else { Issue.record("seed \(seed): no summary"); return }
        let covered = segments.reduce(Int64(0)) { $0 + $1.1 - $1.0 }
        #expect(s.heartRateZoneTimes.totalMs == covered, "seed \(seed)")
        #expect(s.heartRateZoneTimes.values == times(upTo: .max), "seed \(seed)")
        #expect(s.heartRateZoneTimes.totalMs <= s.timerTimeMs)
        let lapTotals = s.lapHeartRateZoneTimes.reduce(Int64(0)) { $0 + $1.totalMs }
        #expect(lapTotals == covered, "seed \(seed): the laps' zone times add up to the ride's")
    }

    @Test func screenShowsTheAnnouncedZone() {
        var h = Harness()
        h.startRide()
        Self.ride(&h, from: 3_000, to: 5_000) { _ in [(.heartRate, 140)] }
        #expect(h.core.screen[.heartRateZone] == 4, "140 bpm is Z4 of 91/114/136/158")
        #expect(h.core.screen.heartRateZoneCount == 5)
        #expect(h.zoneUpdates.last?.zone == 3)
        Self.ride(&h, from: 5_000, to: 7_000) { _ in [(.heartRate, 100)] }
        #expect(h.core.screen[.heartRateZone] == 2)
        // Data stops: the last frame (6.75 s) is in the record of 7 s, which counts until 8 s and
        // could be bridged to a value up to 9 s (the 2 s hold limit) ⇒ no zone from 10 s.
        Self.ride(&h, from: 7_000, to: 16_000) { _ in [] }
        #expect(h.core.screen[.heartRateZone] == nil)
        let last = h.zoneUpdates.last!
        #expect(last.zone == nil && last.previousZone == 1)
        #expect(last.lastSampleInstant.milliseconds == 10_000, "announced at the record after the hold ran out")
    }

    @Test func screenNumbersZonesAsTheModelNamesThem() throws {
        var config = AppConfiguration()
        config.ride.heartRateZones = try ZoneFormulas.percentOfMax(maxHeartRateBpm: 190)   // Z0 below 95
        config.ride.powerZones = try ZoneFormulas.coggan(ftpW: 250)
        var h = Harness(config)
        h.startRide()
        Self.ride(&h, from: 3_000, to: 5_000) { _ in [(.heartRate, 100), (.power, 230)] }
        #expect(h.core.screen[.heartRateZone] == 1, "100 bpm is Z1 (95–113) of 50/60/70/80/90 % of 190")
        #expect(h.core.screen.heartRateZoneName == "Z1")
        #expect(h.core.screen[.powerZone] == 4, "230 W is Coggan level 4 (225–262 W)")
        #expect(h.core.screen.powerZoneName == "Threshold")
        #expect(h.core.screen.powerZoneCount == 7)
    }

    // MARK: Crash recovery

    struct Snapshot: Equatable {
        var state: SessionState
        var training: TrainingSettings
        var autoPause: AutoPauseMonitor
        var monitors: [TargetZoneMonitor?]
        var lastZone: [Int?]
        var events: [RideEvent]
        var laps: [Lap]
        var ride: StatisticsSet
        var hrZones: ZoneTimes
        var powerZones: ZoneTimes
        var metadata: [String]
        var settings: RideSettings

        init(_ c: AppCore) {
            state = c.state
            training = c.training
            autoPause = c.autoPause
            monitors = c.zoneSlots.map(\.targetMonitor)
            lastZone = c.zoneSlots.map(\.lastZone)
            let b = c.builder!
            events = b.events
            laps = b.laps
            ride = b.ride
            hrZones = b.heartRateZoneTimes
            powerZones = b.powerZoneTimes
            metadata = b.metadata.map { "\($0.key)=\($0.value)" }
            settings = b.settings
        }
    }

    /// A ride with custom power zones, targets, auto-pause and auto-lap, cut at many points:
    /// replaying the journal up to each point rebuilds exactly the live state there.
    @Test func replayRebuildsTrainingState() throws {
        var config = AppConfiguration(training: TrainingSettings(heartRateTarget: TargetZone(quantity: .heartRate, zone: 2, graceMs: 5_000),
                                                                 autoPause: AutoPauseSettings(thresholdKmh: 3, delaySeconds: 4),
                                                                 autoLap: AutoLapSettings(everyDistanceM: 200)))
        config.ride.sampleHoldLimitMs = 5_000
        var h = Harness(config)
        h.command(.setRideZones(try ZoneConfiguration(quantity: .power, boundaries: [150, 220, 300])), at: 0)
        h.command(.setTargetZone(TargetZone(quantity: .power, zone: 1, graceMs: 3_000)), at: 0)
        h.startRide()
        var rng = SeededRandom(seed: 99)
        var snapshots: [(Int, Snapshot)] = []
        var distance = 0.0
        var hr = 125.0, power = 180.0
        var t: Int64 = 3_000
        while t < 200_000 {
            let phase = (t / 1000) % 60
            let speed = phase < 45 ? 9.0 : 0.2 // a stop every minute
            distance += speed / 4
            hr = min(190, max(90, hr + Double.random(in: -4...4, using: &rng)))
            power = min(500, max(0, power + Double.random(in: -30...30, using: &rng)))
            h.sample(.speed, speed, at: t)
            h.sample(.distance, distance, at: t)
            if phase % 17 != 3 { h.sample(.heartRate, hr.rounded(), at: t) }
            h.sample(.power, power.rounded(), at: t)
            if t % 1000 == 0 {
                h.tick(t)
                snapshots.append((h.records.count, Snapshot(h.core)))
            }
            if t == 100_250 { h.command(.setTargetZone(TargetZone(quantity: .heartRate, zone: 3)), at: t) }
            t += 250
        }
        let events = h.events
        #expect(events.contains { $0.kind == .pause && $0.trigger == .auto })
        #expect(events.contains { $0.kind == .lap && $0.trigger == .distance })
        #expect(h.alerts.contains(.zoneDrift(.power, above: true)) || h.alerts.contains(.zoneDrift(.power, above: false)))
        let records = h.records
        var compared = 0, pausedPoints = 0, alertedPoints = 0
        for (index, (count, live)) in snapshots.enumerated() where index % 5 == 0 || index == snapshots.count - 1 {
            var fresh = AppCore(configuration: config, randomSeed: 1)
            for r in records[..<count] { fresh.replay(r) }
            fresh.finishReplayedRecord()
            let rebuilt = Snapshot(fresh)
            #expect(rebuilt == live, "replay of \(count) records differs")
            if rebuilt != live { return }
            compared += 1
            if live.state == .paused { pausedPoints += 1 }
            if live.monitors.contains(where: { if case .alerted = $0?.state { true } else { false } }) { alertedPoints += 1 }
        }
        #expect(compared >= 35)
        #expect(pausedPoints > 0 && alertedPoints > 0, "the cut points include auto-paused and alerted states")
    }
}
