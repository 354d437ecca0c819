import Battery
import Testing

/// The monitor: charge, drain, time left, levels with hysteresis, the power-off decision.
struct BatteryMonitorTests {
    func reading(_ percent: Double, voltage: Double? = nil, current: Double? = nil, rate: Double? = nil,
                 external: Bool? = nil, fromVoltage: Bool = false) -> BatteryReading {
        var r = BatteryReading()
        r.percent = percent
        r.voltageV = voltage
        r.currentA = current
        r.chargeRatePercentPerHour = rate
        r.externalPower = external
        r.percentFromVoltage = fromVoltage
        return r
    }

    /// A steady drain of 10 %/h from 80 %: after the window fills the drain is measured as 10 %/h
    /// and the time left is (charge − 5 %) / 10 %/h.
    @Test func drainAndTimeLeftFromTheCharge() throws {
        var m = BatteryMonitor(settings: BatterySettings())
        var t: Int64 = 0
        var percent = 80.0
        while t <= 30 * 60_000 {
            _ = m.update(reading(percent), atMs: t)
            if t < BatteryMonitor.drainWindowMinMs { #expect(m.drainPercentPerHour == nil, "no drain before 5 min at \(t)") }
            t += 2_000
            percent -= 10.0 * 2 / 3600
        }
        let d = try #require(m.drainPercentPerHour)
        #expect(abs(d - 10) < 0.05, "\(d)")
        let left = try #require(m.timeLeftMinutes)
        let expected = (m.percent! - 5) / 10 * 60
        #expect(abs(Double(left) - expected) <= 1, "\(left) vs \(expected)")
        #expect(m.status(atMs: t).timeLeftMinutes == left)
    }

    /// Before the window spans 5 minutes the gauge's own rate (MAX17048 CRATE) gives the drain,
    /// or the current over the capacity.
    @Test func instantDrainBeforeTheWindow() {
        var m = BatteryMonitor(settings: BatterySettings())
        _ = m.update(reading(50, rate: -8), atMs: 0)
        #expect(m.drainPercentPerHour == 8 && m.timeLeftMinutes == Int((45.0 / 8 * 60).rounded()))
        var s = BatterySettings()
        s.capacityMah = 2_000
        var c = BatteryMonitor(settings: s)
        _ = c.update(reading(50, current: -0.25), atMs: 0) // 250 mA of 2 000 mAh: 12.5 %/h
        #expect(c.drainPercentPerHour == 12.5)
        var none = BatteryMonitor(settings: BatterySettings())
        _ = none.update(reading(50), atMs: 0)
        #expect(none.drainPercentPerHour == nil && none.timeLeftMinutes == nil)
    }

    /// Levels: each reached once on the way down (an alert each), left only 2 % above.
    @Test func levelsWithHysteresis() {
        var m = BatteryMonitor(settings: BatterySettings())
        var t: Int64 = 0
        var changes: [BatteryMonitor.Change] = []
        for p in [30.0, 21, 20, 21, 19.5, 21.5, 20, 22.5, 20, 10, 9] {
            if let c = m.update(reading(p), atMs: t) { changes.append(c) }
            t += 2_000
        }
        // 20 → low; 21/21.5 stay low; 22.5 leaves it; 20 again → low again; 10 → very low.
        #expect(changes == [.levelFell(.low), .levelFell(.low), .levelFell(.veryLow)])
        #expect(m.level == .veryLow)
    }

    /// The critical level, three readings in a row, not charging: power off, once.
    @Test func powerOffAtTheCriticalLevel() {
        var m = BatteryMonitor(settings: BatterySettings())
        var out: [BatteryMonitor.Change?] = []
        for (i, p) in [6.0, 5, 4.9, 4.8, 4.7, 4.6].enumerated() { out.append(m.update(reading(p), atMs: Int64(i) * 2_000)) }
        #expect(out == [.levelFell(.veryLow), .levelFell(.critical), nil, .powerOffNeeded, nil, nil])
        #expect(m.powerOffAsked)
    }

    /// A glitch of one reading at the critical level, or a charger plugged in, is no power-off.
    @Test func noPowerOffOnAGlitchOrWhileCharging() {
        var m = BatteryMonitor(settings: BatterySettings())
        for (i, p) in [50.0, 4, 4, 50, 50, 50, 50].enumerated() { _ = m.update(reading(p), atMs: Int64(i) * 2_000) }
        #expect(!m.powerOffAsked)
        var c = BatteryMonitor(settings: BatterySettings())
        for i in 0..<10 { _ = c.update(reading(3, external: true), atMs: Int64(i) * 2_000) }
        #expect(!c.powerOffAsked && c.charging && c.timeLeftMinutes == nil)
        var off = BatterySettings()
        off.powerOff = false
        var w = BatteryMonitor(settings: off)
        for i in 0..<10 { _ = w.update(reading(3), atMs: Int64(i) * 2_000) }
        #expect(!w.powerOffAsked && w.level == .critical)
    }

    /// The battery board's power button asks once.
    @Test func powerButtonAsksOnce() {
        var m = BatteryMonitor(settings: BatterySettings())
        var r = reading(60)
        r.powerButtonRequest = true
        #expect(m.update(r, atMs: 0) == .powerButton)
        #expect(m.update(r, atMs: 2_000) == nil)
    }

    /// A voltage-derived charge is smoothed (a load step does not jump the charge); a gauge's is not.
    @Test func voltageChargeIsSmoothed() {
        var m = BatteryMonitor(settings: BatterySettings())
        _ = m.update(reading(60, fromVoltage: true), atMs: 0)
        _ = m.update(reading(40, fromVoltage: true), atMs: 2_000)
        #expect(abs(m.percent! - (60 - 20.0 * 2 / 60)) < 1e-9)
        var g = BatteryMonitor(settings: BatterySettings())
        _ = g.update(reading(60), atMs: 0)
        _ = g.update(reading(40), atMs: 2_000)
        #expect(g.percent == 40)
    }

    /// No reading, or a stale one: the status says "unknown" (nil), never an old number.
    @Test func staleAndMissingReadings() {
        var m = BatteryMonitor(settings: BatterySettings())
        #expect(m.status(atMs: 0).percent == nil)
        _ = m.update(reading(70), atMs: 0)
        #expect(m.status(atMs: 1_000).percent == 70)
        _ = m.update(nil, atMs: 2_000)
        #expect(m.readingsRejected == 1)
        #expect(m.status(atMs: BatteryMonitor.staleMs + 1).percent == nil)
        var nan = reading(0)
        nan.percent = .nan
        _ = m.update(nan, atMs: 3_000)
        #expect(m.readingsRejected == 2)
    }

    /// Random readings in any order of time never break the monitor's bounds.
    @Test func randomReadingsStayInBounds() {
        var g = UInt64(7)
        func next() -> UInt64 { g = g &* 6364136223846793005 &+ 1442695040888963407; return g >> 33 }
        var m = BatteryMonitor(settings: BatterySettings())
        var t: Int64 = 0
        for _ in 0..<5_000 {
            t += Int64(next() % 5_000)
            var r = BatteryReading()
            r.percent = Double(Int(next() % 240) - 70)
            r.currentA = next() % 3 == 0 ? Double(Int(next() % 400) - 200) / 100 : nil
            r.chargeRatePercentPerHour = next() % 4 == 0 ? Double(Int(next() % 100) - 50) : nil
            r.percentFromVoltage = next() % 2 == 0
            _ = m.update(next() % 17 == 0 ? nil : r, atMs: t)
            let s = m.status(atMs: t)
            if let p = s.percent { #expect((0...100).contains(p)) }
            if let left = s.timeLeftMinutes { #expect(left >= 0 && left <= BatteryMonitor.timeLeftMinutesMax) }
            if let d = m.drainPercentPerHour { #expect(d >= 0 && d.isFinite) }
        }
    }
}
