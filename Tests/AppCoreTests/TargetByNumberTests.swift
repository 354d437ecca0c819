import Control
import Testing
import AppCore
import RideModel
import Training

/// `target hr 3` on the control socket: the zone number the rider sees, the protocol words for
/// auto-pause and auto-lap, and their refusals.
struct TargetByNumberTests {
    static func reply(_ core: inout AppCore, _ line: String, at ms: Int64 = 0) -> CommandReply? {
        guard case .success(.command(let c)) = ControlProtocol.parse(line) else { return nil }
        core.handle(.command(c, at: MonotonicInstant(milliseconds: ms)))
        var last: CommandReply?
        while let e = core.drainEffect() { if case .reply(let r) = e { last = r } }
        return last
    }

    @Test func zoneNumberFollowsTheModelsNumbering() throws {
        // Percent-of-max zones name a band below zone 1 "Z0": the rider's Z3 is index 3.
        let zones = try ZonesInForce.preferred(from: RiderProfile(age: 30, heartRateModel: .percentOfMax)).heartRate.zones
        var core = AppCore(configuration: AppConfiguration(ride: RideSettings(heartRateZones: zones)), randomSeed: 1)
        let ok = try #require(Self.reply(&core, "target hr 3"))
        #expect(ok.ok, "\(ok.message)")
        #expect(ok.message.contains("Z3"))
        #expect(core.screen.heartRateTargetZone == nil || core.screen.heartRateTargetZone == 3)
        let index = (0..<zones.zoneCount).first { zones.number(ofZone: $0) == 3 }
        #expect(index == 3)
        // Default zones (91/114/136/158): Z1…Z5, the rider's Z2 is index 1.
        var plain = AppCore(configuration: AppConfiguration(ride: RideSettings(heartRateZones: .defaultHeartRate)), randomSeed: 1)
        let two = try #require(Self.reply(&plain, "target hr z2"))
        #expect(two.ok && two.message.contains("Z2"), "\(two.message)")
        let none = try #require(Self.reply(&plain, "target hr 9"))
        #expect(!none.ok && none.message.contains("Z1–Z5"), "\(none.message)")
        let off = try #require(Self.reply(&plain, "target hr off"))
        #expect(off.ok && off.message.contains("off"))
    }

    @Test func powerTargetNeedsPowerZones() throws {
        var core = AppCore(randomSeed: 1)
        let r = try #require(Self.reply(&core, "target power 3"))
        #expect(!r.ok && r.message.contains("no power zones"), "\(r.message)")
    }

    @Test func protocolWordsForAutoPauseAndAutoLap() {
        #expect(ControlProtocol.parse("autopause on") == .success(.command(.setAutoPause(AutoPauseSettings()))))
        #expect(ControlProtocol.parse("autopause off") == .success(.command(.setAutoPause(nil))))
        #expect(ControlProtocol.parse("autolap 5km") == .success(.command(.setAutoLap(AutoLapSettings(everyDistanceM: 5_000)))))
        #expect(ControlProtocol.parse("autolap 10min") == .success(.command(.setAutoLap(AutoLapSettings(everyTimerMs: 600_000)))))
        #expect(ControlProtocol.parse("autolap off") == .success(.command(.setAutoLap(nil))))
        for bad in ["autolap", "autolap 0km", "autolap fast", "autopause maybe", "target", "target hr", "target legs 2", "target hr -1"] {
            guard case .failure(let e) = ControlProtocol.parse(bad) else {
                Issue.record("'\(bad)' was accepted")
                continue
            }
            #expect("\(e)".contains("use:"), "'\(bad)': \(e)")
        }
    }
}

struct CustomZonesProtocolTests {
    @Test func customZonesForTheNextRideOnly() throws {
        var core = AppCore(randomSeed: 1)
        let set = try #require(TargetByNumberTests.reply(&core, "zones hr 120,140,155,170"))
        #expect(set.ok, "\(set.message)")
        #expect(set.message.contains("next ride") && set.message.contains("not saved"))
        // The ride that starts next uses them (journaled in its header).
        core.handle(.command(.start, at: MonotonicInstant(milliseconds: 0)))
        core.handle(.tick(MonotonicInstant(milliseconds: 3_000)))
        #expect(core.header?.settings.heartRateZones?.boundaries == [120, 140, 155, 170])
        let refused = try #require(TargetByNumberTests.reply(&core, "zones hr 100,110", at: 4_000))
        #expect(!refused.ok, "zones cannot change once the ride runs")
        while core.drainEffect() != nil {}
        for bad in ["zones hr", "zones hr 150,140", "zones hr -5,10", "zones legs 1,2", "zones hr 1,2,x", "zones power 1,2,3,4,5,6,7,8,9,10"] {
            guard case .failure(let e) = ControlProtocol.parse(bad) else { Issue.record("'\(bad)' was accepted"); continue }
            #expect("\(e)".contains("use:"), "'\(bad)': \(e)")
        }
        #expect(ControlProtocol.parse("zones power preferred") == .success(.command(.clearRideZones(.power))))
    }
}

struct PairingCodeTests {
    /// `pairing-code NNNNNN` reaches the core as `showPairingCode` (the control socket's stream
    /// parser reads the line; see ControlStream): shown until cleared, over every screen.
    @Test func pairingCodeIsShownUntilCleared() {
        var core = AppCore(randomSeed: 1)
        core.handle(.command(.showPairingCode(48_213), at: MonotonicInstant(milliseconds: 0)))
        #expect(core.screen.pairingCode == 48_213)
        core.handle(.tick(MonotonicInstant(milliseconds: 60_000)))
        #expect(core.screen.pairingCode == 48_213, "stays until the companion clears it")
        core.handle(.command(.showPairingCode(1_000_000), at: MonotonicInstant(milliseconds: 60_500)))
        #expect(core.screen.pairingCode == 48_213, "more than six digits is refused")
        core.handle(.command(.showPairingCode(nil), at: MonotonicInstant(milliseconds: 61_000)))
        #expect(core.screen.pairingCode == nil)
        while core.drainEffect() != nil {}
    }
}
