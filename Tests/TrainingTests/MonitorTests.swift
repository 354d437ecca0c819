import TestSupport
import Testing
import RideModel
import Training

private func at(_ s: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: s * 1000) }

/// Target-zone alerts: grace period, hysteresis, one alert per excursion.
struct TargetZoneMonitorTests {
    // Default HR zones 91/114/136/158; target Z3 = [114, 136), margin 3 bpm, grace 10 s.
    static func monitor(grace: Int64 = 10_000, margin: Double = 3) -> TargetZoneMonitor {
        TargetZoneMonitor(target: TargetZone(quantity: .heartRate, zone: 2, graceMs: grace, hysteresis: margin), zones: .defaultHeartRate)
    }

    /// Feeds one value per second from second 0; returns (second, event) pairs.
    static func run(_ m: inout TargetZoneMonitor, _ values: [Double?]) -> [(Int, TargetZoneAlertEvent)] {
        var out: [(Int, TargetZoneAlertEvent)] = []
        for (i, v) in values.enumerated() {
            if let e = m.observe(v, at: at(Int64(i))) { out.append((i, e)) }
        }
        return out
    }

    @Test func alertsAfterTheGracePeriodOnceAndClearsWhenBack() {
        var m = Self.monitor()
        // in for 5 s, above (150) for 60 s, back in for 10 s
        let values: [Double?] = Array(repeating: 120, count: 5) + Array(repeating: 150, count: 60) + Array(repeating: 125, count: 10)
        let events = Self.run(&m, values)
        #expect(events.count == 2)
        #expect(events.first?.0 == 15, "out from second 5, alert when out 10 s")
        #expect(events.first?.1 == .drift(above: true))
        #expect(events.last?.0 == 65)
        #expect(events.last?.1 == .backInZone)
    }

    @Test func shortExcursionsWithinTheGracePeriodNeverAlert() {
        var m = Self.monitor()
        var values: [Double?] = []
        for _ in 0..<20 { values += Array(repeating: 100, count: 9) + Array(repeating: 120, count: 1) } // 9 s low, 1 s in
        #expect(Self.run(&m, values).isEmpty)
    }

    @Test func noStormAtABoundary() {
        // Wobbling across the upper boundary 136 within the 3 bpm margin: no state change at all.
        var m = Self.monitor()
        let wobble: [Double?] = (0..<300).map { $0 % 2 == 0 ? 135 : 138.5 }
        #expect(Self.run(&m, wobble).isEmpty)
        #expect(m.state == .inZone)
        // Once out (beyond the margin) and alerted, wobbling near the boundary stays one excursion.
        var n = Self.monitor()
        let values: [Double?] = Array(repeating: 150, count: 12) + (0..<300).map { $0 % 2 == 0 ? 137 : 139.5 }
        let events = Self.run(&n, values)
        #expect(events.count == 1, "\(events)")
        #expect(n.alertCount == 1)
        // Without hysteresis the same wobble would clear and re-alert: the margin is what prevents it.
        var strict = Self.monitor(grace: 0, margin: 0)
        let strictEvents = Self.run(&strict, wobble)
        #expect(strictEvents.count > 100, "margin 0 and grace 0 alert on every crossing (what the margin avoids)")
    }

    @Test func withinTheMarginWhileOutCountsAsStillOut() {
        var m = Self.monitor()
        // out at 0 (140 ≥ 136 + 3), then 137 (inside the margin) for 20 s: alert at 10 s
        let events = Self.run(&m, [140] + Array(repeating: 137, count: 20))
        #expect(events.map(\.0) == [10])
        #expect(events.first?.1 == .drift(above: true))
    }

    @Test func belowTheZoneAndMissingValues() {
        var m = Self.monitor()
        // below at 0..4, no data 5..14, below again: still the same excursion, alert at 10
        let values: [Double?] = Array(repeating: 100, count: 5) + Array(repeating: nil, count: 10) + Array(repeating: 100, count: 5)
        let events = Self.run(&m, values)
        #expect(events.map(\.0) == [15], "no data changes nothing; the first value at or after the grace alerts")
        #expect(events.first?.1 == .drift(above: false))
    }

    @Test func resetStartsANewGracePeriod() {
        var m = Self.monitor()
        _ = Self.run(&m, Array(repeating: 150, count: 8))
        m.reset()
        #expect(m.state == .unknown)
        #expect(m.observe(150, at: at(9)) == nil)
        #expect(m.observe(150, at: at(18)) == nil)
        #expect(m.observe(150, at: at(19)) == .drift(above: true))
    }

    /// Random traces: alerts alternate drift / back; every drift comes after at least the grace
    /// period with no value inside the zone; staying out beyond the margin for grace + 1 s
    /// without an alert never happens.
    @Test func randomTracesKeepTheRules() {
        for seed in UInt64(1)...200 {
            var rng = SeededRandom(seed: seed)
            let grace = Int64.random(in: 0...15, using: &rng) * 1000
            var m = Self.monitor(grace: grace)
            var values: [Double?] = []
            var level = Double.random(in: 100...150, using: &rng)
            for _ in 0..<600 {
                if Int.random(in: 0..<10, using: &rng) == 0 { values.append(nil); continue }
                level = min(190, max(60, level + Double.random(in: -4...4, using: &rng)))
                values.append(level.rounded())
            }
            let events = Self.run(&m, values)
            var expectDrift = true
            for (i, e) in events {
                switch e {
                case .drift:
                    #expect(expectDrift, "seed \(seed): two drifts without a back in zone")
                    // no value inside the zone in the last grace seconds
                    let from = max(0, i - Int(grace / 1000))
                    let inside = values[from...i].contains { v in v.map { $0 >= 114 && $0 < 136 } ?? false }
                    #expect(!inside, "seed \(seed): drift at \(i) though in zone within the grace period")
                case .backInZone:
                    #expect(!expectDrift, "seed \(seed): back in zone without a drift")
                    #expect(values[i].map { $0 >= 114 && $0 < 136 } == true)
                }
                expectDrift.toggle()
            }
            // Liveness: a run of out-beyond-margin values spanning the grace period while not
            // alerted must have produced an alert by its end.
            var alerted = false
            var runStart: Int?
            var eventIndex = 0
            for (i, v) in values.enumerated() {
                while eventIndex < events.count && events[eventIndex].0 <= i {
                    alerted = events[eventIndex].1 != .backInZone
                    eventIndex += 1
                }
                guard let v else { continue }
                if v >= 139 || v < 111 {
                    runStart = runStart ?? i
                    if Int64(i - runStart!) * 1000 >= grace {
                        #expect(alerted, "seed \(seed): out since \(runStart!) to \(i) without an alert")
                    }
                } else {
                    runStart = nil
                }
            }
        }
    }
}

/// Auto-pause and auto-lap on scripted speed traces.
struct AutoPauseLapTests {
    /// Runs a 1 Hz speed trace (m/s, nil = no data) through the monitor, applying its decisions
    /// as the app would; returns the pause/resume seconds.
    static func run(_ trace: [Double?], settings: AutoPauseSettings = AutoPauseSettings()) -> [(Int, AutoPauseMonitor.Decision)] {
        var m = AutoPauseMonitor(settings: settings)
        m.didStart(at: at(0))
        var out: [(Int, AutoPauseMonitor.Decision)] = []
        for (i, v) in trace.enumerated() {
            guard let d = m.observe(speedMps: v, at: at(Int64(i))) else { continue }
            out.append((i, d))
            switch d {
            case .pause: m.didPause(at: at(Int64(i)), trigger: .auto)
            case .resume: m.didResume(at: at(Int64(i)), trigger: .auto)
            }
        }
        return out
    }

    @Test func defaultsAreThreeKmhAndOff() {
        #expect(abs(AutoPauseSettings().thresholdMps * 3.6 - 3) < 1e-12)
        let t = TrainingSettings()
        #expect(t.autoPause == nil && t.autoLap == nil && t.heartRateTarget == nil && t.powerTarget == nil)
        var m = AutoPauseMonitor(settings: nil)
        m.didStart(at: at(0))
        for i in 0..<100 { #expect(m.observe(speedMps: 0, at: at(Int64(i))) == nil) }
    }

    @Test func pausesAfterTheDelayAndResumesWhenMoving() {
        // 10 s at 8 m/s, a stop (0.5 m/s, below 3 km/h) for 20 s, 10 s at 8 m/s; delay 5 s.
        let trace: [Double?] = Array(repeating: 8, count: 10) + Array(repeating: 0.5, count: 20) + Array(repeating: 8, count: 10)
        let d = Self.run(trace)
        #expect(d.map(\.0) == [15, 30])
        #expect(d.map(\.1) == [.pause, .resume])
    }

    @Test func briefSlowdownsDoNotPause() {
        // 4 s slow, 1 s fast, repeated: never 5 s below the threshold.
        var trace: [Double?] = []
        for _ in 0..<20 { trace += Array(repeating: 0.3, count: 4) + [2.0] }
        #expect(Self.run(trace).isEmpty)
        // 0.84 m/s is just above 3 km/h (0.8333 m/s): moving.
        #expect(Self.run(Array(repeating: 0.84, count: 30)).isEmpty)
    }

    @Test func missingSpeedNeitherPausesNorResetsNorResumes() {
        // slow at 0–2, no data 3–9, slow at 10: 10 s since the first slow record ⇒ pause at 10;
        // no data after that never resumes.
        let trace: [Double?] = [0, 0, 0] + Array(repeating: nil, count: 7) + [0] + Array(repeating: nil, count: 10)
        let d = Self.run(trace)
        #expect(d.map(\.0) == [10])
    }

    @Test func aManualPauseIsNotAutoResumed() {
        var m = AutoPauseMonitor(settings: AutoPauseSettings())
        m.didStart(at: at(0))
        m.didPause(at: at(3), trigger: .manual)
        #expect(m.observe(speedMps: 9, at: at(4)) == nil, "the rider paused: riding on does not resume")
        m.didResume(at: at(5), trigger: .manual)
        // After a manual resume the slow stretch starts over.
        for i in 6..<11 { #expect(m.observe(speedMps: 0, at: at(Int64(i))) == nil) }
        #expect(m.observe(speedMps: 0, at: at(11)) == .pause)
    }

    @Test func customThresholdAndDelay() {
        let s = AutoPauseSettings(thresholdKmh: 8, delaySeconds: 2)
        let trace: [Double?] = [3, 3, 2, 2, 2, 2, 2.3, 3]  // 8 km/h = 2.22 m/s
        let d = Self.run(trace, settings: s)
        #expect(d.map(\.0) == [4, 6])
    }

    @Test func settingsAreValidated() {
        #expect(throws: TrainingSettingsError.self) { try AutoPauseSettings(thresholdMps: -1).validate() }
        #expect(throws: TrainingSettingsError.self) { try AutoPauseSettings(thresholdMps: 1, delayMs: -5).validate() }
        #expect(throws: TrainingSettingsError.autoLapWithoutTrigger) { try AutoLapSettings().validate() }
        #expect(throws: TrainingSettingsError.self) { try AutoLapSettings(everyDistanceM: 0).validate() }
        #expect(throws: TrainingSettingsError.self) { try AutoLapSettings(everyTimerMs: 500).validate() }
        #expect(throws: TrainingSettingsError.targetZoneOutOfRange(.heartRate, zone: 5, zoneCount: 5)) {
            try TargetZone(quantity: .heartRate, zone: 5).validate(against: .defaultHeartRate)
        }
        #expect(throws: TrainingSettingsError.targetWithoutZones(.power)) { try TargetZone(quantity: .power, zone: 1).validate(against: nil) }
        #expect(TrainingSettingsError.targetZoneOutOfRange(.heartRate, zone: 5, zoneCount: 5).description.contains("choose Z1 to Z5"))
    }

    @Test func autoLapByDistanceAndTime() {
        let km = AutoLapSettings.kilometres(1)
        #expect(km.due(lapDistanceM: 999.9, lapTimerMs: 10_000_000) == nil, "distance only: time does not lap")
        #expect(km.due(lapDistanceM: 1000, lapTimerMs: 0) == .distance)
        let min = AutoLapSettings.minutes(5)
        #expect(min.due(lapDistanceM: 1e6, lapTimerMs: 299_999) == nil)
        #expect(min.due(lapDistanceM: 0, lapTimerMs: 300_000) == .time)
        let both = AutoLapSettings(everyDistanceM: 5000, everyTimerMs: 600_000)
        #expect(both.due(lapDistanceM: 5000, lapTimerMs: 600_000) == .distance)
        #expect(both.due(lapDistanceM: 10, lapTimerMs: 600_000) == .time)
    }

    /// A scripted ride at varying speed: the laps a simulated rider gets from the stateless rule
    /// are each at least the lap distance and less than it plus one record's distance.
    @Test func autoLapDistanceOnAScriptedTrace() {
        let lap = AutoLapSettings(everyDistanceM: 1000)
        var lapStart = 0.0, distance = 0.0
        var laps: [Double] = []
        for i in 0..<2000 {
            let v = 5.0 + Double(i % 7) // 5–11 m/s
            distance += v
            if lap.due(lapDistanceM: distance - lapStart, lapTimerMs: 0) == .distance {
                laps.append(distance - lapStart)
                lapStart = distance
            }
        }
        #expect(laps.count == Int(distance / 1000) || laps.count == Int(distance / 1000) - 1)
        #expect(laps.allSatisfy { $0 >= 1000 && $0 < 1011 })
    }
}

/// Training settings round-trip through their journal form.
struct TrainingSettingsJournalTests {
    @Test func roundTrip() throws {
        for seed in UInt64(1)...100 {
            var rng = SeededRandom(seed: seed)
            var s = TrainingSettings()
            if Bool.random(using: &rng) {
                s.heartRateTarget = TargetZone(quantity: .heartRate, zone: Int.random(in: 0...4, using: &rng),
                                               graceMs: Int64.random(in: 0...60_000, using: &rng), hysteresis: Double.random(in: 0...10, using: &rng))
            }
            if Bool.random(using: &rng) { s.powerTarget = TargetZone(quantity: .power, zone: Int.random(in: 0...6, using: &rng)) }
            if Bool.random(using: &rng) {
                s.autoPause = AutoPauseSettings(thresholdMps: Double.random(in: 0.1...5, using: &rng), delayMs: Int64.random(in: 0...30_000, using: &rng))
            }
            if Bool.random(using: &rng) {
                s.autoLap = AutoLapSettings(everyDistanceM: Bool.random(using: &rng) ? Double.random(in: 100...50_000, using: &rng) : nil,
                                            everyTimerMs: Int64.random(in: 60_000...3_600_000, using: &rng))
            }
            var back = TrainingSettings(heartRateTarget: TargetZone(quantity: .heartRate, zone: 1), autoPause: AutoPauseSettings())
            for e in s.metadataEntries { #expect(try back.apply(metadataKey: e.key, value: e.value)) }
            #expect(back == s, "seed \(seed)")
        }
    }

    @Test func unreadableValuesAreRefusedAndOtherKeysIgnored() throws {
        var s = TrainingSettings()
        #expect(throws: TrainingSettingsError.unreadable(key: TrainingSettings.autoPauseKey, value: "below_mps=fast")) {
            try s.apply(metadataKey: TrainingSettings.autoPauseKey, value: "below_mps=fast")
        }
        #expect(throws: TrainingSettingsError.self) { try s.apply(metadataKey: TrainingSettings.heartRateTargetKey, value: "zone=0") }
        #expect(throws: TrainingSettingsError.self) { try s.apply(metadataKey: TrainingSettings.autoLapKey, value: "lap") }
        #expect(try s.apply(metadataKey: "bike", value: "road") == false)
        #expect(s == TrainingSettings())
    }
}
