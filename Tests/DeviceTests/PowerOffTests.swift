import AppCore
import Battery
import Device
import Journal
import RideModel
import Testing

/// The runtime's side of powering off (docs/power.md): the request goes to the power port only
/// after the notice time, with the journal made durable first; a power cut right after the
/// request loses nothing and the ride comes back paused.
struct PowerOffTests {
    final class Port: PowerPort {
        var requests: [(PowerOffReason, syncsBefore: Int)] = []
        var fail: String?
        let flash: SimulatedFlash
        init(_ flash: SimulatedFlash) { self.flash = flash }
        func requestPowerOff(_ reason: PowerOffReason) -> String? {
            requests.append((reason, flash.syncCount))
            return fail
        }
    }

    static func config() -> AppConfiguration {
        var s = BatterySettings()
        s.enabled = true
        return AppConfiguration(battery: s)
    }

    static func reading(_ p: Double) -> BatteryReading {
        var r = BatteryReading()
        r.percent = p
        r.voltageV = 3.5
        return r
    }

    @Test func criticalBatteryPowersOffOnceDurableAndTheRideComesBackPaused() throws {
        let flash = SimulatedFlash(segmentBytes: 32 * 1024)
        flash.cutMode = .loseUnsynced
        let opened = FlashJournal.open(storage: flash, configuration: Self.config(), randomSeed: 3, deviceNow: .zero)
        let d = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: DiscardingArchive(), log: MemoryLog(),
                                   wall: nil, at: .zero)
        let port = Port(flash)
        d.powerPort = port
        _ = d.command(.start, at: ms(0))
        var t: Int64 = 0
        while t < 20_000 {
            t += 1_000
            d.tick(at: ms(t))
        }
        #expect(d.state == .running)
        let rideID = try #require(d.core.header?.rideID)
        let timerBefore = d.core.screen.timerMs
        for _ in 0..<3 {
            t += 1_000
            d.battery(Self.reading(4), at: ms(t))
            d.tick(at: ms(t))
        }
        let askedAt = t
        #expect(d.powerOffReason == .batteryCritical && d.state == .paused)
        #expect(port.requests.isEmpty, "asked before the rider could read why")
        while t < askedAt + DeviceRuntime.powerOffNoticeMs {
            t += 500
            d.tick(at: ms(t))
        }
        #expect(port.requests.count == 1 && port.requests.first?.0 == .batteryCritical)
        #expect(d.powerOffRequested && d.powerOffProblem == nil)
        d.tick(at: ms(t + 5_000))
        #expect(port.requests.count == 1, "asked once")
        // The power goes: everything not synced is lost. The ride is all there, paused.
        flash.powerCycle()
        let back = FlashJournal.open(storage: flash, configuration: Self.config(), randomSeed: 4, deviceNow: .zero)
        #expect(back.report.recoveredRide == rideID)
        #expect(back.core.state == .paused)
        #expect(back.core.screen.timerMs >= timerBefore)
    }

    /// A request that cannot be made (the request file not writable) is retried, then given up
    /// and said; the ride stays paused and durable.
    @Test func aRequestThatFailsIsRetriedThenGivenUp() {
        let flash = SimulatedFlash(segmentBytes: 32 * 1024)
        let opened = FlashJournal.open(storage: flash, configuration: Self.config(), randomSeed: 3, deviceNow: .zero)
        let log = MemoryLog()
        let d = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: DiscardingArchive(), log: log, wall: nil, at: .zero)
        let port = Port(flash)
        port.fail = "/run/bikecomputer/power-off: permission denied"
        d.powerPort = port
        var t: Int64 = 0
        for _ in 0..<3 { t += 1_000; d.battery(Self.reading(3), at: ms(t)) }
        while t < 60_000 { t += 500; d.tick(at: ms(t)) }
        #expect(port.requests.count == DeviceRuntime.powerOffRequestsMax)
        #expect(d.powerOffProblem?.contains("permission denied") == true)
        var said = false
        log.lines.forEach { if $0.contains("giving up: switch the unit off by hand") { said = true } }
        #expect(said)
    }
}
