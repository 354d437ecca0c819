import RideFiles
import RideModel
import Testing

/// The unit's battery in the FIT file (docs/power.md, docs/rides.md): a device_info of the unit
/// (device_index 0) at the ride's start and at its stop, with battery_voltage (scale 256),
/// battery_status and battery_level, from the journaled `device.battery_start`/`_end`.
struct UnitBatteryFITTests {
    func withBattery(_ ride: SimulatedRide, start: String?, end: String?) -> [RideRecord] {
        var r = ride.records
        if let start { r.insert(.metadata(key: DeviceBattery.atStartKey, value: start), at: 1) }
        if let end {
            let stop = r.lastIndex { if case .event(let e) = $0 { e.kind == .stop } else { false } } ?? r.count
            r.insert(.metadata(key: DeviceBattery.atEndKey, value: end), at: stop)
        }
        return r
    }

    func unitBatteries(_ bytes: [UInt8]) throws -> [FITMessage] {
        try FITFile(bytes: bytes).messages(23).filter { $0.values[0] == 0 && $0.values[32] != nil }
    }

    @Test func startAndEndBatteryAreWrittenAsTheUnitsDeviceInfo() throws {
        let ride = SimulatedRide(seed: 31, seconds: 600)
        let fit = try FITEncoder.encode(records: withBattery(ride, start: "percent=82;voltage_mv=3987;charging=0",
                                                            end: "percent=15;voltage_mv=3612;charging=1"))
        let file = try FITFile(bytes: fit)
        let units = try unitBatteries(fit)
        #expect(units.count == 2)
        let start = try #require(units.first), end = try #require(units.last)
        #expect(start.values[32] == 82 && start.values[11] == 2 && start.value(10, scale: 256).map { abs($0 - 3.987) < 0.004 } == true)
        #expect(end.values[32] == 15 && end.values[11] == 6 && end.value(10, scale: 256).map { abs($0 - 3.612) < 0.004 } == true)
        // At the start and at the stop: the session's start_time and timestamp.
        let session = try #require(file.messages(18).first)
        #expect(start.timestamp == session.values[2].map(UInt32.init) && end.timestamp == session.timestamp)
        // The sensors' device_info messages are as before (no battery_voltage field of theirs).
        #expect(file.messages(23).filter { ($0.values[0] ?? 0) > 0 }.allSatisfy { $0.values[10] == nil })
    }

    @Test func withoutABatteryNothingChanges() throws {
        let ride = SimulatedRide(seed: 31, seconds: 600)
        let plain = try FITEncoder.encode(records: ride.records)
        #expect(try unitBatteries(plain).isEmpty)
        // A malformed value is left out, never a crash.
        let bad = try FITEncoder.encode(records: withBattery(ride, start: "percent=lots", end: "charging=2"))
        #expect(try unitBatteries(bad).isEmpty)
        #expect(bad == plain)
    }

    @Test func metadataValuesRoundTrip() {
        for b in [DeviceBattery(percent: 0, voltageMv: 3300, charging: false), DeviceBattery(percent: 100, voltageMv: nil, charging: true),
                  DeviceBattery(percent: nil, voltageMv: 4200, charging: false)] {
            #expect(DeviceBattery(metadataValue: b.metadataValue) == b)
        }
        #expect(DeviceBattery(metadataValue: "percent=50;later_field=7")?.percent == 50)
        #expect(DeviceBattery(metadataValue: "") == nil && DeviceBattery(metadataValue: "percent=101") == nil)
        #expect(DeviceBattery(percent: 55, voltageMv: nil, charging: false).fitBatteryStatus == 2)
        #expect(DeviceBattery(percent: 12, voltageMv: nil, charging: false).fitBatteryStatus == 4)
        #expect(DeviceBattery(percent: 4, voltageMv: nil, charging: false).fitBatteryStatus == 5)
    }
}
