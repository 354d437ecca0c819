import Testing
import RideModel
@testable import Sensors

@Suite struct DataSourceTests {
    static let hrm = SourceIdentity.ant(deviceNumber: 11, deviceType: 120, transmissionType: 1)
    static let pm = SourceIdentity.ant(deviceNumber: 22, deviceType: 11, transmissionType: 5)
    static let cad = SourceIdentity.ble(BLEAddress("AA:BB:CC:DD:EE:01")!)

    struct Collected {
        var samples: [Sample] = []
        var functions: [(SensorRole, SensorState, Int?)] = []
        var found: [FoundSensor] = []
        var searches: [(Bool, Int)] = []
        var radar: [RadarPicture] = []
        mutating func take(_ o: SensorEvent) {
            switch o {
            case .sample(let s): samples.append(s)
            case let .status(st, _): functions.append((st.role, st.state, st.batteryPercent))
            case .gps, .clock, .bridgeConfig: break
            case .found(let f, _): found.append(f)
            case let .search(running, n, _): searches.append((running, n))
            case .radar(let p, _): radar.append(p)
            }
        }
        func values(_ q: Quantity) -> [Double] { samples.filter { $0.quantity == q }.map(\.value) }
    }

    func data(_ who: SourceIdentity, _ code: UInt16, _ hex: String) -> BridgeFrame {
        BridgeFrame(bridgeTimeUs: 0, .data(who, profileCode: code, hexPayload(hex)))
    }

    func source() -> DataSource {
        DataSource(DataSourceConfiguration(sensors: [
            PairedSensor(Self.hrm),
            PairedSensor(Self.pm, priority: 0),
            PairedSensor(Self.cad, provides: QuantitySet(.cadence, .speed, .distance), priority: 1),
        ], wheelCircumferenceMm: 2000))
    }

    /// Pairing or forgetting while running: the sensors still paired keep their state and
    /// decoders (a power meter mid-ride stays connected), a new one starts searching, a
    /// forgotten one no longer counts for its role.
    @Test func replacingThePairedSensorsKeepsTheOnesThatStay() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { c.take($0) }
        ds.handle(data(Self.hrm, 120, "00 ff 00 fe 00 04 01 48"), at: ms(100)) { c.take($0) }
        ds.handle(data(Self.hrm, 120, "00 ff 00 fe 00 08 02 49"), at: ms(1_100)) { c.take($0) }
        #expect(ds.roleState(.heartRate) == .connected)
        let newStrap = SourceIdentity.ble(BLEAddress("AA:BB:CC:DD:EE:99")!)
        c = Collected()
        ds.replaceSensors([PairedSensor(Self.hrm), PairedSensor(newStrap, provides: QuantitySet(.heartRate), priority: 1)], at: ms(1_200)) { c.take($0) }
        #expect(ds.sensorState(0) == .connected && ds.sensorState(1) == .searching)
        #expect(ds.roleState(.heartRate) == .connected)
        #expect(ds.roleState(.power) == .notConfigured && ds.roleState(.cadence) == .notConfigured, "the meter and the cadence sensor were forgotten")
        #expect(c.functions.contains { $0.0 == .power && $0.1 == .notConfigured })
        // The strap's decoder kept its state: the next page decodes at once.
        ds.handle(data(Self.hrm, 120, "00 ff 00 fe 00 0c 03 4a"), at: ms(2_100)) { c.take($0) }
        #expect(c.values(.heartRate).last == 74)
        ds.handle(data(Self.pm, 11, "10 01 ff 5a 00 00 c8 00"), at: ms(2_200)) { c.take($0) }
        #expect(ds.status.bad[.unpairedSensor] == 1, "a forgotten sensor's frames are unpaired")
    }

    @Test func anUnusableSensorIsLostAndCounted() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { c.take($0) }
        ds.handle(BridgeFrame(bridgeTimeUs: 0, .link(Self.cad, profileCode: 0, .unusable)), at: ms(10)) { c.take($0) }
        #expect(ds.status.bad[.unusableSensor] == 1)
        #expect(ds.sensorState(2) == .searching, "never connected: still searching (lost once it was connected)")
    }

    @Test func searchFramesReachTheAppInPairingsWords() {
        var inputs = SensorInputs(DataSourceConfiguration(sensors: []))
        var c = Collected()
        let frames = [
            BridgeFrame(bridgeTimeUs: 1, .scanState(running: true, radios: 3, found: 0)),
            BridgeFrame(bridgeTimeUs: 2, .found(FoundSensorFrame(.ble(BLEAddress("C0:FF:EE:00:11:22")!), profileCode: BridgeFrame.serviceCyclingPower,
                                                                 rssi: -61, name: SensorName("Crank PM")))),
            BridgeFrame(bridgeTimeUs: 3, .found(FoundSensorFrame(.ble(BLEAddress("C0:FF:EE:00:11:33")!), profileCode: BridgeFrame.serviceSpeedCadence,
                                                                 rssi: nil, name: SensorName()))),
            BridgeFrame(bridgeTimeUs: 4, .found(FoundSensorFrame(.ant(deviceNumber: 777, deviceType: 123, transmissionType: 1), profileCode: 123,
                                                                 rssi: -80, name: SensorName()))),
            BridgeFrame(bridgeTimeUs: 5, .scanState(running: false, radios: 3, found: 3)),
        ]
        for f in frames {
            f.encoded().withBytes { b in inputs.receive(.bridgePacket(b, truncated: false), at: ms(10)) { c.take($0) } }
        }
        #expect(c.found == [FoundSensor(id: "ble:C0:FF:EE:00:11:22", kind: .power, name: "Crank PM", rssi: -61),
                            FoundSensor(id: "ble:C0:FF:EE:00:11:33", kind: .speedCadence, name: "", rssi: nil),
                            FoundSensor(id: "ant:777/123/0", kind: .speed, name: "", rssi: -80)])
        #expect(c.searches.map(\.0) == [true, false] && c.searches.last?.1 == 3)
        #expect(inputs.status.bad.total == 0)
        // Frames that go the other way, or come with a descriptor, are misplaced here: counted.
        BridgeFrame(bridgeTimeUs: 6, .reload).encoded().withBytes { b in inputs.receive(.bridgePacket(b, truncated: false), at: ms(10)) { c.take($0) } }
        #expect(inputs.status.bad[.badFrameKind] == 1)
    }

    @Test func startAnnouncesSearchingAndUnpairedIsCounted() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { c.take($0) }
        #expect(c.functions.count == SensorRole.allCases.count)
        #expect(c.functions.allSatisfy { $0.1 == ($0.0 == .gps || $0.0 == .radar ? .notConfigured : .searching) }) // no GPS, no radar paired
        ds.handle(data(.ant(deviceNumber: 99, deviceType: 120, transmissionType: 1), 120, "00 00 00 00 00 00 00 48"), at: ms(10)) { c.take($0) }
        #expect(ds.status.bad[.unpairedSensor] == 1)
        #expect(c.samples.isEmpty)
        ds.handle(data(Self.hrm, 999, "00"), at: ms(10)) { c.take($0) }
        #expect(ds.status.bad[.unknownProfile] == 1)
    }

    @Test func heartRateConnectsThenStaleThenLostAndValuesStop() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        ds.handle(data(Self.hrm, 120, "00 00 00 00 00 00 00 48"), at: ms(100)) { c.take($0) }
        #expect(c.values(.heartRate) == [72])
        #expect(ds.roleState(.heartRate) == .connected)
        ds.tick(at: ms(3200)) { c.take($0) }
        #expect(ds.sensorState(0) == .stale)
        ds.handle(BridgeFrame(bridgeTimeUs: 1, .heartbeat(sequence: 1)), at: ms(4000)) { _ in }
        ds.handle(BridgeFrame(bridgeTimeUs: 1, .heartbeat(sequence: 2)), at: ms(8000)) { _ in }
        ds.tick(at: ms(10_200)) { c.take($0) }
        #expect(ds.sensorState(0) == .lost)
        #expect(ds.roleState(.heartRate) == .lost)
        #expect(c.functions.last! == (.heartRate, .lost, nil))
    }

    @Test func priorityPowerMeterCadenceWinsWhileConnected() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        // Power meter 0x10 page with 90 rpm, and a BLE CSC crank reading.
        ds.handle(data(Self.pm, 11, "10 01 ff 5a 00 00 c8 00"), at: ms(0)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "02 0a 00 00 00"), at: ms(10)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "02 0b 00 00 02"), at: ms(510)) { c.take($0) }
        #expect(c.values(.cadence) == [90])
        #expect(ds.status.samplesSuperseded >= 1)
        // The power meter goes quiet (stale): the cadence sensor takes over.
        ds.tick(at: ms(3100)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "02 0c 00 00 04"), at: ms(3200)) { c.take($0) }
        #expect(c.values(.cadence) == [90, 120])
    }

    /// A connected sensor of higher priority that could provide cadence but does not send it
    /// (a power meter without crank data) does not keep the cadence sensor's values out; once it
    /// sends cadence, it wins again.
    @Test func aHigherPrioritySensorThatDoesNotDeliverAQuantityDoesNotHideIt() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        // Power meter page 0x10 with cadence 0xFF (invalid: no cadence), connected and sending.
        ds.handle(data(Self.pm, 11, "10 01 ff ff 00 00 c8 00"), at: ms(0)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "02 0a 00 00 00"), at: ms(10)) { c.take($0) }
        ds.handle(data(Self.pm, 11, "10 02 ff ff 00 00 c8 00"), at: ms(250)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "02 0b 00 00 02"), at: ms(510)) { c.take($0) }
        #expect(c.values(.cadence) == [120], "\(c.values(.cadence))")
        #expect(ds.status.samplesSuperseded == 0)
        // Now the power meter reports cadence: it is preferred while it keeps doing so.
        ds.handle(data(Self.pm, 11, "10 03 ff 5a 00 00 c8 00"), at: ms(600)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "02 0c 00 00 04"), at: ms(1010)) { c.take($0) }
        #expect(c.values(.cadence) == [120, 90])
        #expect(ds.status.samplesSuperseded == 1)
    }

    @Test func disabledQuantityIsNotEmittedAndFunctionNotConfigured() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        ds.setEnabled(.heartRate, false, at: ms(0)) { c.take($0) }
        #expect(c.functions.last! == (.heartRate, .notConfigured, nil))
        ds.handle(data(Self.hrm, 120, "00 00 00 00 00 00 00 48"), at: ms(100)) { c.take($0) }
        #expect(c.values(.heartRate).isEmpty)
        #expect(ds.status.samplesDisabled == 1)
    }

    @Test func bridgeDeathLosesAllAndDistanceStaysMonotonic() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        ds.handle(data(Self.cad, 0x2A5B, "01 00 00 00 00 00 00"), at: ms(0)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "01 02 00 00 00 00 04"), at: ms(1000)) { c.take($0) }
        #expect(c.values(.distance) == [0, 4])
        ds.bridgeDisconnected(at: ms(1500)) { c.take($0) }
        #expect(ds.roleState(.speed) == .lost)
        // Reconnect: the sensor's counter continues; the first reading is a new reference.
        ds.handle(data(Self.cad, 0x2A5B, "01 10 00 00 00 00 10"), at: ms(20_000)) { c.take($0) }
        ds.handle(data(Self.cad, 0x2A5B, "01 11 00 00 00 00 14"), at: ms(21_000)) { c.take($0) }
        #expect(ds.roleState(.speed) == .connected)
        #expect(c.values(.distance) == [0, 4, 4, 6])
    }

    @Test func batteryFromCommonPageReachesFunctionStatus() {
        var ds = source()
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        ds.handle(data(Self.pm, 11, "52 ff 00 05 00 00 80 a3"), at: ms(0)) { c.take($0) }
        #expect(c.functions.contains { $0.0 == .power && $0.1 == .connected && $0.2 == 75 })
        #expect(ds.sensorBattery(1) == 75)
        let reports = ds.sensorReports
        #expect(reports.map(\.state) == [.searching, .connected, .searching])
        #expect(reports[1].batteryPercent == 75 && reports[1].lastDataAt == ms(0) && reports[0].lastDataAt == nil)
    }

    @Test func rateLimitDropsFloods() {
        var ds = source()
        ds.start(at: ms(0)) { _ in }
        for k in 0..<100 { ds.handle(data(Self.hrm, 120, "00 00 00 00 00 00 00 48"), at: ms(Int64(k))) { _ in } }
        #expect(ds.status.bad[.rateLimited] == 60)
        #expect(ds.status.payloadsDecoded == 40)
    }

    @Test func truncatedAndReservedAreCounted() {
        var ds = source()
        ds.start(at: ms(0)) { _ in }
        ds.handle(data(Self.hrm, 120, "00 00 00"), at: ms(0)) { _ in }
        ds.handle(data(Self.cad, 0x2A5B, "03 00"), at: ms(0)) { _ in }
        ds.handle(data(Self.cad, 0x2A5B, "80"), at: ms(0)) { _ in }
        #expect(ds.status.bad[.truncated] == 2)
        #expect(ds.status.bad[.reservedFlags] == 1)
    }

    @Test func linkFramesDriveStates() {
        var ds = source()
        ds.start(at: ms(0)) { _ in }
        ds.handle(BridgeFrame(bridgeTimeUs: 0, .link(Self.cad, profileCode: 0x2A5B, .connected)), at: ms(0)) { _ in }
        #expect(ds.sensorState(2) == .connected)
        ds.handle(BridgeFrame(bridgeTimeUs: 0, .link(Self.cad, profileCode: 0x2A5B, .disconnected)), at: ms(10)) { _ in }
        #expect(ds.sensorState(2) == .lost)
    }

    @Test func bridgeSilenceMeansLost() {
        var ds = source()
        ds.start(at: ms(0)) { _ in }
        ds.handle(data(Self.hrm, 120, "00 00 00 00 00 00 00 48"), at: ms(0)) { _ in }
        ds.tick(at: ms(4_999)) { _ in }
        #expect(ds.status.bridgeConnected)
        ds.tick(at: ms(5_000)) { _ in }
        #expect(!ds.status.bridgeConnected)
        #expect(ds.sensorState(0) == .lost)
    }

    @Test func bridgeRestartWithNewIDLosesSensorsUntilHeardAgain() {
        var ds = source()
        ds.start(at: ms(0)) { _ in }
        ds.handle(BridgeFrame(bridgeTimeUs: 0, .hello(protocolVersionMax: 1, radios: 1, bridgeID: 1)), at: ms(0)) { _ in }
        ds.handle(data(Self.hrm, 120, "00 00 00 00 00 00 00 48"), at: ms(10)) { _ in }
        #expect(ds.sensorState(0) == .connected)
        // The same bridge saying hello again (a reconnect) changes nothing.
        ds.handle(BridgeFrame(bridgeTimeUs: 0, .hello(protocolVersionMax: 1, radios: 1, bridgeID: 1)), at: ms(20)) { _ in }
        #expect(ds.sensorState(0) == .connected)
        // A new bridge id: it restarted.
        ds.handle(BridgeFrame(bridgeTimeUs: 0, .hello(protocolVersionMax: 1, radios: 1, bridgeID: 2)), at: ms(30)) { _ in }
        #expect(ds.sensorState(0) == .lost)
        #expect(ds.roleState(.heartRate) == .lost)
        ds.handle(data(Self.hrm, 120, "00 00 00 00 00 00 00 48"), at: ms(40)) { _ in }
        #expect(ds.sensorState(0) == .connected)
        #expect(ds.status.lastBridgeID == 2)
    }

    @Test func wildcardTransmissionTypeMatchesAndOtherTypesDoNot() {
        var ds = DataSource(DataSourceConfiguration(sensors: [PairedSensor(.ant(deviceNumber: 5, deviceType: 120, transmissionType: 0))]))
        var c = Collected()
        ds.start(at: ms(0)) { _ in }
        ds.handle(data(.ant(deviceNumber: 5, deviceType: 120, transmissionType: 0x51), 120, "00 00 00 00 00 00 00 48"), at: ms(0)) { c.take($0) }
        ds.handle(data(.ant(deviceNumber: 5, deviceType: 11, transmissionType: 0x51), 11, "10 01 ff 5a 00 00 c8 00"), at: ms(0)) { c.take($0) }
        #expect(c.values(.heartRate) == [72])
        #expect(c.values(.power).isEmpty)
        #expect(ds.status.bad[.unpairedSensor] == 1)
    }

    /// The input seam: a receiver on the board (here standing in for a GPS through gpsd) reports
    /// decoded values under a transport-neutral identity and follows the same rules as a bridge
    /// sensor — pairing, priority (a wheel sensor wins while it delivers), role state — but the
    /// bridge going away does not lose it.
    @Test func onboardSourceFollowsTheSameRulesAndOutlivesTheBridge() {
        let wheel = SourceIdentity.ble(BLEAddress("AA:BB:CC:DD:EE:02")!)
        let gnss = SourceIdentity.onboard(.gnss)
        var ds = DataSource(DataSourceConfiguration(sensors: [
            PairedSensor(wheel, provides: QuantitySet(.speed, .distance), priority: 0),
            PairedSensor(gnss, provides: QuantitySet(.speed), priority: 1),
        ], wheelCircumferenceMm: 2000))
        var c = Collected()
        ds.start(at: ms(0)) { c.take($0) }
        var fix = DerivedValues()
        fix.speedMps = 7.5
        ds.handle(fix, from: gnss, at: ms(100)) { c.take($0) }
        #expect(c.values(.speed) == [7.5], "the only speed source")
        #expect(ds.roleState(.speed) == .connected)
        // The wheel sensor delivers: it wins while it does.
        ds.handle(data(wheel, 0x2A5B, "01 00 00 00 00 00 00"), at: ms(200)) { c.take($0) }
        ds.handle(data(wheel, 0x2A5B, "01 02 00 00 00 00 04"), at: ms(1200)) { c.take($0) }
        ds.handle(fix, from: gnss, at: ms(1300)) { c.take($0) }
        #expect(c.values(.speed) == [7.5, 4], "the wheel's 4 m/s, not the GPS's")
        #expect(ds.status.samplesSuperseded == 1)
        // The bridge goes away: the wheel sensor is lost, the onboard receiver is not.
        ds.bridgeDisconnected(at: ms(1400)) { c.take($0) }
        #expect(ds.sensorState(0) == .lost)
        #expect(ds.sensorState(1) == .connected)
        ds.handle(fix, from: gnss, at: ms(1500)) { c.take($0) }
        #expect(c.values(.speed).last == 7.5)
        // An onboard receiver that loses what it measures (a GPS fix) says so through `link`.
        ds.link(gnss, .disconnected, at: ms(1600)) { c.take($0) }
        #expect(ds.sensorState(1) == .lost)
        #expect(ds.roleState(.speed) == .lost)
        // An onboard identity never travels in a bridge frame: it is written as an invalid
        // transport, which a receiver rejects as malformed.
        let bytes = BridgeFrame(bridgeTimeUs: 0, .data(gnss, profileCode: 0, hexPayload("00"))).encoded().bytes
        #expect(throws: DecodeError.self) { try BridgeFrame.parse(bytes) }
    }
}
