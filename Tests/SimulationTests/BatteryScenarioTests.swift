import AppCore
import Control
import Device
import RideFiles
import RideModel
import Simulation
import Testing

/// The battery scenario of the simulator (Simulator/scenarios/battery.scenario, docs/power.md):
/// a pack that runs down mid-ride warns at 20 % and 10 %, pauses the ride and powers the unit
/// off at 5 %; charged and switched on again, the ride comes back paused and is saved whole.
struct BatteryScenarioTests {
    static let text = """
    seed 31
    duration 1h40m
    battery 32% 30%/h
    at 2s press start
    at 20m press lap
    at 1h05m charger on
    at 1h20m power-on
    at 1h21m press start
    at 1h30m press start
    at 1h31m hold start 2s
    """

    final class Alerts: RideObserver {
        var seen: [(Int64, Alert)] = []
        var offs: [(Int64, PowerOffReason)] = []
        func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant) {
            if case .alert(let a) = effect { seen.append((now.milliseconds, a)) }
            if case .powerOff(let r) = effect { offs.append((now.milliseconds, r)) }
        }
    }

    @Test func theBatteryRunsDownTheUnitPowersOffAndTheRideComesBack() throws {
        let scenario = try Scenario.parse(Self.text)
        #expect(scenario.battery == Scenario.BatteryPack(startPercent: 32, drainPercentPerHour: 30))
        let archive = MemoryArchive()
        let sim = HeadlessRun(scenario: scenario, options: .init(seed: 31), storage: SimulatedFlashStorage(), archive: archive)
        let alerts = Alerts()
        _ = sim.runtime.addObserver(alerts)
        var stateAtOff: SessionState?
        var timerAtOff: Int64?
        while let next = sim.nextEventTime(), next <= scenario.durationMs, sim.counters.powerOffs == 0 {
            sim.advance(to: next)
            if sim.runtime.powerOffReason != nil, stateAtOff == nil {
                stateAtOff = sim.runtime.state
                timerAtOff = sim.runtime.core.screen.timerMs
            }
        }
        #expect(sim.counters.powerOffs == 1)
        let words = alerts.seen.map { $0.1 }
        #expect(words.contains(.lowBattery(percent: 20)) && words.contains(.lowBattery(percent: 10)))
        #expect(words.contains(.batteryEmpty) && words.contains(.poweringOff(.batteryCritical)))
        // 32 % → 20 % at 30 %/h: 24 min (± a reading); 5 %: 54 min.
        let low = try #require(alerts.seen.first { $0.1 == .lowBattery(percent: 20) }).0
        #expect(abs(low - 24 * 60_000) < 10_000, "\(low)")
        let off = try #require(alerts.offs.first)
        #expect(off.1 == .batteryCritical && abs(off.0 - 54 * 60_000) < 20_000, "\(off.0)")
        #expect(stateAtOff == .paused)
        // Off: charged, switched on at 1 h 20 min: the ride is recovered, paused, and goes on.
        sim.run()
        #expect(sim.counters.recoveries == 1)
        #expect(archive.rides.count == 1, "one ride, saved once")
        let ride = try RideExport(records: try #require(archive.rides.first).records)
        let timer = ride.builder.timerTimeMs(at: ride.stopInstant)
        // Before the power-off ~54 min less the countdown; after it 9 min more of riding.
        #expect(timer >= (timerAtOff ?? 0) + 8 * 60_000, "\(timer) vs \(timerAtOff ?? 0)")
        #expect(ride.metadataValue(DeviceBattery.atStartKey)?.hasPrefix("percent=32") == true)
        let end = try #require(ride.metadataValue(DeviceBattery.atEndKey).flatMap(DeviceBattery.init(metadataValue:)))
        #expect(end.charging || (end.percent ?? 0) > 40, "\(end)")
    }

    @Test func batteryInstructionsAreChecked() {
        for bad in ["battery 120% 10%/h", "battery 40 10%/h", "battery 40% 10", "at 1m charger maybe", "at 1m battery 150%"] {
            #expect(throws: Scenario.ParseError.self, "\(bad)") { try Scenario.parse(bad) }
        }
        #expect(throws: Never.self) { try Scenario.parse("battery 40% 10%/h\nat 1m charger on\nat 2m battery 12%\nat 3m power-on\nat 4m hold power 3s") }
    }
}
