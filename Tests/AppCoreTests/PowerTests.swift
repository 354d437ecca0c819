import Battery
import Testing
@testable import AppCore
import RideModel

/// The unit's battery in the app core, powering off before the pack dies, and the phone's time
/// (docs/power.md).
struct PowerTests {
    static func core(battery: Bool = true) -> AppCore {
        var s = BatterySettings()
        s.enabled = battery
        return AppCore(configuration: AppConfiguration(battery: s), randomSeed: 5)
    }

    static func feed(_ core: inout AppCore, _ input: AppInput) -> [AppEffect] {
        core.handle(input)
        var out: [AppEffect] = []
        while let e = core.drainEffect() { out.append(e) }
        return out
    }

    static func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: ms) }

    static func reading(_ percent: Double, volts: Double = 3.8, external: Bool? = nil) -> BatteryReading {
        var r = BatteryReading()
        r.percent = percent
        r.voltageV = volts
        r.externalPower = external
        return r
    }

    /// A running ride on a unit whose battery runs down: the warning alerts at 20 % and 10 %, then
    /// at 5 % (three readings) the ride is paused and synced, the screen says why, and the power
    /// off is asked for — after the sync, in that order.
    @Test func criticalBatteryPausesTheRideAndAsksToPowerOff() throws {
        var core = Self.core()
        _ = Self.feed(&core, .command(.start, at: Self.at(0)))
        _ = Self.feed(&core, .tick(Self.at(3_000)))
        #expect(core.state == .running)
        var alerts: [Alert] = []
        var t: Int64 = 4_000
        var effects: [AppEffect] = []
        for p in [25.0, 20, 15, 10, 7, 5, 5, 5] {
            effects = Self.feed(&core, .battery(Self.reading(p), at: Self.at(t)))
            alerts += effects.compactMap { if case .alert(let a) = $0 { a } else { nil } }
            t += 2_000
            _ = Self.feed(&core, .tick(Self.at(t)))
        }
        #expect(alerts == [.lowBattery(percent: 20), .lowBattery(percent: 10), .batteryEmpty, .poweringOff(.batteryCritical)])
        // The last reading: the pause's records, a sync, then the power-off.
        let pause = try #require(effects.firstIndex { if case .journal(.event(let e)) = $0 { e.kind == .pause } else { false } })
        let sync = try #require(effects.lastIndex(of: .syncJournal))
        let off = try #require(effects.firstIndex(of: .powerOff(.batteryCritical)))
        #expect(pause < sync && sync < off)
        #expect(core.state == .paused && core.screen.poweringOff == .batteryCritical)
        // Nothing starts while powering off; no second power-off.
        _ = Self.feed(&core, .command(.end, at: Self.at(t)))
        let again = Self.feed(&core, .battery(Self.reading(4), at: Self.at(t + 2_000)))
        #expect(!again.contains(.powerOff(.batteryCritical)))
    }

    /// The battery's charge at the ride's start and stop is journaled for the FIT file.
    @Test func theBatteryIsJournaledAtStartAndStop() {
        var core = Self.core()
        _ = Self.feed(&core, .battery(Self.reading(83, volts: 3.987), at: Self.at(0)))
        let start = Self.feed(&core, .command(.start, at: Self.at(100))) + Self.feed(&core, .tick(Self.at(3_100)))
        _ = Self.feed(&core, .battery(Self.reading(81, volts: 3.95), at: Self.at(5_000)))
        let end = Self.feed(&core, .command(.end, at: Self.at(6_000)))
        func meta(_ e: [AppEffect], _ key: String) -> String? {
            e.compactMap { if case .journal(.metadata(let k, let v)) = $0, k == key { v } else { nil } }.first
        }
        #expect(meta(start, DeviceBattery.atStartKey) == "percent=83;voltage_mv=3987;charging=0")
        #expect(meta(end, DeviceBattery.atEndKey) == "percent=81;voltage_mv=3950;charging=0")
        // Without a gauge: nothing.
        var none = Self.core(battery: false)
        let e = Self.feed(&none, .command(.start, at: Self.at(0))) + Self.feed(&none, .tick(Self.at(3_000)))
        #expect(meta(e, DeviceBattery.atStartKey) == nil && none.screen.battery == nil)
    }

    /// The screen's battery: charge, time left, charging; unknown once the readings stop.
    @Test func theScreenShowsTheBattery() {
        var core = Self.core()
        #expect(core.screen.battery == BatteryStatus())
        var r = Self.reading(64)
        r.chargeRatePercentPerHour = -6
        _ = Self.feed(&core, .battery(r, at: Self.at(0)))
        #expect(core.screen.battery == BatteryStatus(percent: 64, timeLeftMinutes: (59 * 60) / 6, charging: false, level: .ok))
        _ = Self.feed(&core, .tick(Self.at(BatteryMonitor.staleMs + 1)))
        #expect(core.screen.battery?.percent == nil)
        _ = Self.feed(&core, .battery(Self.reading(64, external: true), at: Self.at(40_000)))
        #expect(core.screen.battery?.charging == true && core.screen.battery?.timeLeftMinutes == nil)
    }

    /// The power button held `powerOffHoldMs` (3 s): the power-off, with the ride paused; a
    /// short press does nothing; a hold of START's long press (1.5 s) is not enough.
    @Test func powerButtonHeld() {
        var core = Self.core(battery: false)
        _ = Self.feed(&core, .command(.start, at: Self.at(0)))
        _ = Self.feed(&core, .tick(Self.at(3_000)))
        _ = Self.feed(&core, .button(ButtonEvent(.power, .down, at: Self.at(4_000))))
        let short = Self.feed(&core, .button(ButtonEvent(.power, .up, at: Self.at(5_600))))
        #expect(!short.contains(.powerOff(.powerButton)) && core.state == .running)
        _ = Self.feed(&core, .button(ButtonEvent(.power, .down, at: Self.at(6_000))))
        #expect(core.nextDeadline == Self.at(6_000 + 3_000) || core.nextDeadline! <= Self.at(9_000))
        let held = Self.feed(&core, .tick(Self.at(9_000)))
        #expect(held.contains(.powerOff(.powerButton)) && core.state == .paused && core.screen.poweringOff == .powerButton)
        _ = Self.feed(&core, .button(ButtonEvent(.power, .up, at: Self.at(9_500))))
        #expect(core.state == .paused)
    }

    /// Idle, a power-off closes nothing but itself; a countdown is cancelled.
    @Test func powerOffFromIdleAndCountdown() {
        var idle = Self.core()
        let e = Self.feed(&idle, .battery({ var r = Self.reading(60); r.powerButtonRequest = true; return r }(), at: Self.at(0)))
        #expect(e.contains(.powerOff(.powerButton)) && !e.contains(.syncJournal) && idle.state == .idle)
        var countdown = Self.core()
        _ = Self.feed(&countdown, .command(.start, at: Self.at(0)))
        #expect(countdown.state == .prepared)
        for i in 0..<3 { _ = Self.feed(&countdown, .battery(Self.reading(2), at: Self.at(Int64(i) * 500))) }
        #expect(countdown.state == .idle && countdown.screen.poweringOff == .batteryCritical)
    }

    // MARK: The phone's time

    static let trueMs: Int64 = 1_790_000_000_000

    /// The clock not trusted (a board booted on its saved clock, 3 days behind): the phone's
    /// time is taken as trusted, announced (rides saved meanwhile are dated by it) and, during a
    /// ride, journaled.
    @Test func thePhoneDatesTheRideWhileTheClockIsNotTrusted() {
        var core = Self.core(battery: false)
        _ = Self.feed(&core, .wallClock(WallClockTime(unixMs: Self.trueMs - 3 * 86_400_000, trusted: false), at: Self.at(0)))
        _ = Self.feed(&core, .command(.start, at: Self.at(1_000)))
        _ = Self.feed(&core, .tick(Self.at(4_000)))
        let e = Self.feed(&core, .command(.phoneTime(unixMs: Self.trueMs + 10_000), at: Self.at(10_000)))
        #expect(e.contains { if case .reply(let r) = $0 { r.ok } else { false } })
        #expect(e.contains { if case .journal(.wallClock(let a)) = $0 { a.wall == WallClockTime(unixMs: Self.trueMs + 10_000, trusted: true) } else { false } })
        #expect(e.contains { if case .clockTrusted = $0 { true } else { false } })
        #expect(core.wallAnchorForRide?.wall.trusted == true && core.phoneTimesAccepted == 1)
    }

    /// Never over a trusted clock, and never behind the unit's own clock (which is at worst the
    /// time it last saved).
    @Test func thePhoneNeverMovesATrustedClockOrGoesBack() {
        var trusted = Self.core(battery: false)
        _ = Self.feed(&trusted, .wallClock(WallClockTime(unixMs: Self.trueMs, trusted: true), at: Self.at(0)))
        let e = Self.feed(&trusted, .command(.phoneTime(unixMs: Self.trueMs + 3_600_000), at: Self.at(1_000)))
        #expect(e.contains { if case .reply(let r) = $0 { !r.ok && r.message.contains("already trusted") } else { false } })
        #expect(trusted.wallAnchor?.wall.unixMs == Self.trueMs && trusted.phoneTimesRefused == 1)
        var behind = Self.core(battery: false)
        _ = Self.feed(&behind, .wallClock(WallClockTime(unixMs: Self.trueMs, trusted: false), at: Self.at(0)))
        let b = Self.feed(&behind, .command(.phoneTime(unixMs: Self.trueMs - 60_000), at: Self.at(1_000)))
        #expect(b.contains { if case .reply(let r) = $0 { !r.ok && r.message.contains("behind the unit's clock") } else { false } })
        #expect(behind.wallAnchor?.wall.trusted == false)
        // Within the tolerance (a round trip), it is taken.
        let ok = Self.feed(&behind, .command(.phoneTime(unixMs: Self.trueMs + 1_000 - 3_000), at: Self.at(1_000)))
        #expect(ok.contains { if case .reply(let r) = $0 { r.ok } else { false } })
        // Once the phone's time is trusted, a later NTP time behind it does not move the ride back.
        _ = Self.feed(&behind, .wallClock(WallClockTime(unixMs: Self.trueMs - 10_000, trusted: true), at: Self.at(2_000)))
        #expect(behind.wallAnchor?.wall.unixMs == Self.trueMs - 2_000)
    }
}
