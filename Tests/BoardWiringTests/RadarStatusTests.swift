import AppCore
import BoardWiring
import Configuration
import Foundation
import RideModel
import Sensors
import Testing

/// `ctl status` → `radar` and `buzzer` (docs/sensors.md, "Rear radar"): what the radar column
/// shows (the role's state, the vehicles: none unless connected), the beeps the core sounded
/// and the ride's counts, from Varia notifications through the bridge socket on a manual clock.
@Suite(.serialized) struct RadarStatusTests {
    static let address = "C0:FF:EE:00:00:05"

    final class Varia {
        let bridge: FakeBridge
        let rig: Rig
        let who = SourceIdentity.ble(BLEAddress(RadarStatusTests.address)!)
        var sequence: UInt8 = 0

        init(_ rig: Rig) throws {
            self.rig = rig
            bridge = try FakeBridge(rig)
        }

        /// One whole frame (header: sequence, 0x2), then 125 ms of the loop (a radar's 8 Hz).
        func frame(_ vehicles: [(track: UInt8, rangeM: UInt8, kmh: UInt8)] = []) throws {
            sequence = (sequence + 1) & 0x0F
            var bytes: [UInt8] = [sequence << 4 | 0x2]
            for v in vehicles { bytes += [v.track, v.rangeM, v.kmh] }
            try bridge.send(.data(who, profileCode: 0x3203, try #require(Payload(bytes))))
            rig.run(ms: 125)
        }
    }

    func radar(_ rig: Rig) throws -> [String: Any] { try #require(try rig.status()["radar"] as? [String: Any]) }
    func patterns(_ rig: Rig) throws -> Int? { try #require(try rig.status()["buzzer"] as? [String: Any])["patterns"] as? Int }

    @Test func theColumnTheBeepsAndTheRideAreInStatus() throws {
        var sensor = DeviceConfig.Sensor(transport: .ble, role: .radar)
        sensor.bleAddress = Self.address
        let rig = try Rig(sensors: [sensor])
        let varia = try Varia(rig)
        var r = try radar(rig)
        #expect(r["state"] as? String != "connected" && (r["vehicles"] as? [Any])?.isEmpty == true, "\(r)")
        #expect(r["ride"] is NSNull, "no ride yet: \(r)")

        // A ride; a clear road while it counts down.
        _ = rig.wiring.controlLine("start")
        for _ in 0..<40 { try varia.frame() }
        r = try radar(rig)
        #expect(r["state"] as? String == "connected" && (r["vehicles"] as? [Any])?.isEmpty == true, "\(r)")
        #expect(rig.runtime.core.state == .running)

        // A vehicle from 50 m at 36 km/h (10 m/s): in the column, one beep, one ride vehicle.
        for i in 0..<8 { try varia.frame([(7, UInt8(50 - i), 36)]) }
        r = try radar(rig)
        let shown = try #require(r["vehicles"] as? [[String: Any]])
        #expect(shown.count == 1, "\(r)")
        #expect(shown.first?["range_m"] as? Double == 43, "\(shown)")
        #expect((shown.first?["closing_speed_mps"] as? Double).map { abs($0 - 10) < 0.01 } == true, "\(shown)")
        #expect(shown.first?["threat"] as? String == "approaching", "\(shown)")
        #expect(r["vehicle_beeps"] as? Int == 1 && r["clear_beeps"] as? Int == 0, "\(r)")
        #expect(try patterns(rig) == 1)
        var ride = try #require(r["ride"] as? [String: Any])
        #expect(ride["vehicles"] as? Int == 1 && ride["alerts"] as? Int == 1 && ride["max_threat"] as? String == "approaching", "\(ride)")

        // Passed: after 2 s of clear road, the clear beep (a second buzzer pattern).
        for _ in 0..<24 { try varia.frame() }
        r = try radar(rig)
        #expect(r["vehicle_beeps"] as? Int == 1 && r["clear_beeps"] as? Int == 1, "\(r)")
        #expect(try patterns(rig) == 2)

        // A fast one (54 km/h: 15 m/s, over the 40 km/h rule).
        for i in 0..<8 { try varia.frame([(8, UInt8(60 - 2 * i), 54)]) }
        r = try radar(rig)
        ride = try #require(r["ride"] as? [String: Any])
        #expect(r["vehicle_beeps"] as? Int == 2 && ride["vehicles"] as? Int == 2 && ride["max_threat"] as? String == "fast_approach", "\(r)")
        #expect((ride["max_closing_speed_mps"] as? Double).map { abs($0 - 15) < 0.01 } == true, "\(ride)")

        // The radar goes quiet with the vehicle in view: stale, then lost, and the column holds
        // no vehicle (it draws the state, never a clear road); no beep meanwhile.
        rig.run(ms: 12_000)
        r = try radar(rig)
        #expect(r["state"] as? String == "lost" && (r["vehicles"] as? [Any])?.isEmpty == true, "\(r)")
        #expect(r["vehicle_beeps"] as? Int == 2 && r["clear_beeps"] as? Int == 1, "\(r)")
    }
}
