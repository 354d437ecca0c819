import Testing
import RideModel
@testable import RideFiles

/// A ride's radar events written as FIT radar_threat_alert events and read back (docs/rides.md):
/// the explicit fields, the data field's components (which decoders expand over the fields, so
/// they must agree) and event_group's vehicles and beep.
struct FITRadarTests {
    static let alerts = [
        RadarAlertRecord(vehiclesArrived: 1, vehiclesInView: 1, maxThreat: .approaching, alerted: true,
                         averageClosingSpeedMps: 6.1, maxClosingSpeedMps: 6.1),
        RadarAlertRecord(vehiclesArrived: 2, vehiclesInView: 3, maxThreat: .fastApproach, alerted: false,
                         averageClosingSpeedMps: 9.4, maxClosingSpeedMps: 15.2),
        RadarAlertRecord(vehiclesArrived: 8, vehiclesInView: 8, maxThreat: .none, alerted: true),
    ]

    static func rideWithRadar() throws -> FITFile {
        var sim = SimulatedRide(seed: 7, seconds: 300)
        // Each event right after a sample at a quarter, half and three quarters of the ride: in
        // time order, as the journal has them, and never inside a gap (the device was down).
        for (k, a) in alerts.enumerated().reversed() {
            let samples = sim.records.indices.filter { if case .sample = sim.records[$0] { return true }; return false }
            let i = samples[samples.count * (k + 1) / (alerts.count + 1)]
            guard case .sample(let s) = sim.records[i] else { preconditionFailure("a sample's index") }
            sim.records.insert(.event(RideEvent(.radar, at: s.instant, value: a.value)), at: i + 1)
        }
        let export = try RideExport(records: sim.records)
        #expect(export.eventsRefused == 0)
        return try FITFile(bytes: FITEncoder.encode(export))
    }

    @Test func radarEventsReadBackWithTheirFigures() throws {
        let file = try Self.rideWithRadar()
        let a = FITActivity(file)
        #expect(a.radarAlerts.count == 3)
        #expect(a.events.filter { $0.event == 75 }.count == 3)
        #expect(a.radarAlerts.map(\.threatLevel) == [2, 3, 1])
        #expect(a.radarAlerts.map(\.inView) == [1, 3, 8])
        #expect(a.radarAlerts.map(\.vehiclesArrived) == [1, 2, 8])
        #expect(a.radarAlerts.map(\.beeped) == [true, false, true])
        #expect(a.radarAlerts.map(\.averageApproachMps) == [6.1, 9.4, nil])
        #expect(a.radarAlerts.map(\.maxApproachMps) == [6.1, 15.2, nil])
        let ts = a.radarAlerts.map(\.timestamp)
        #expect(zip(ts, ts.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func dataComponentsAgreeWithTheFields() throws {
        // A decoder that follows the profile expands data into fields 21-24: the same values.
        let file = try Self.rideWithRadar()
        let events = file.messages(21).filter { $0.values[0] == 75 }
        #expect(events.count == 3)
        for m in events {
            let data = try #require(m.values[3].flatMap { UInt32(exactly: $0) })
            #expect(Double(data & 0xFF) == m.values[21])
            #expect(Double((data >> 8) & 0xFF) == m.values[22])
            for (k, field) in [(UInt32(2), UInt8(23)), (3, 24)] {
                let part = (data >> (8 * k)) & 0xFF
                #expect(part == 0xFF ? m.values[field] == nil : Double(part) == m.values[field], "field \(field)")
            }
        }
    }

    @Test func anotherDevicesRadarEventIsReadFromItsData() throws {
        // Only event, type and data, as a unit without this app's fields would write it.
        var w = FITWriter()
        w.define(local: 0, global: 21, fields: [FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .enumeration),
                                                FITFieldDefinition(1, .enumeration), FITFieldDefinition(3, .uint32)])
        w.begin(local: 0); w.u32(1_000_000_000); w.u8(75); w.u8(3); w.u32(3 | 2 << 8 | 0x3D << 16 | 0xFF << 24); w.end()
        let a = FITActivity(try FITFile(bytes: w.finish()))
        let r = try #require(a.radarAlerts.first)
        #expect(r.threatLevel == 3)
        #expect(r.inView == 2)
        #expect(r.averageApproachMps == 6.1)
        #expect(r.maxApproachMps == nil)
        #expect(r.vehiclesArrived == nil && r.beeped == nil, "not this app's event_group")
    }
}
