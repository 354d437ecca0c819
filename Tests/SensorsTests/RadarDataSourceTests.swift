import RideModel
import Testing
@testable import Sensors

/// A paired radar through the data source: its state is the radar role's, its frames reach the app
/// as pictures (an empty one only while it is connected), a radar switching off is lost at once,
/// and nothing but a radar makes pictures.
@Suite struct RadarDataSourceTests {
    static let antRadar = SourceIdentity.ant(deviceNumber: 4_242, deviceType: 40, transmissionType: 5)
    static let bleRadar = SourceIdentity.ble(BLEAddress("F2:ED:49:D5:26:ED")!)
    static let strap = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)

    struct Out {
        var roles: [(SensorState, Int?)] = []
        var pictures: [RadarPicture] = []
        var others = 0
        mutating func take(_ e: SensorEvent) {
            switch e {
            case let .status(s, _) where s.role == .radar: roles.append((s.state, s.batteryPercent))
            case let .radar(p, _): pictures.append(p)
            default: others += 1
            }
        }
    }

    static func frame(_ who: SourceIdentity, _ code: UInt16, _ hex: String) -> BridgeFrame {
        BridgeFrame(bridgeTimeUs: 0, .data(who, profileCode: code, hexPayload(hex)))
    }

    @Test func anANTRadarsStateAndPictures() {
        var ds = DataSource(DataSourceConfiguration(sensors: [PairedSensor(Self.antRadar)]))
        var o = Out()
        ds.start(at: ms(0)) { o.take($0) }
        #expect(o.roles.last?.0 == .searching, "an ANT+ type 40 is a radar by its device type")
        ds.handle(Self.frame(Self.antRadar, 40, "301500c382894004"), at: ms(100)) { o.take($0) }
        #expect(o.roles.last?.0 == .connected && o.pictures.last?.count == 3)
        ds.handle(Self.frame(Self.antRadar, 40, "5201000500008023"), at: ms(200)) { o.take($0) }
        #expect(o.roles.last?.1 == 75, "the radar's battery on its role")
        ds.handle(Self.frame(Self.antRadar, 40, "3000000000000000"), at: ms(300)) { o.take($0) }
        #expect(o.pictures.last?.isClear == true && o.pictures.count == 2)
        // It says it is switching off: lost now, and no picture says the road is clear.
        ds.handle(Self.frame(Self.antRadar, 40, "0101000000000000"), at: ms(400)) { o.take($0) }
        #expect(o.roles.last?.0 == .lost && o.pictures.count == 2)
        ds.handle(Self.frame(Self.antRadar, 40, "3000000000000000"), at: ms(500)) { o.take($0) }
        #expect(o.roles.last?.0 == .connected && o.pictures.count == 3)
        // Silent: stale, then lost; no picture meanwhile.
        ds.tick(at: ms(3_600)) { o.take($0) }
        #expect(o.roles.last?.0 == .stale)
        ds.tick(at: ms(10_600)) { o.take($0) }
        #expect(o.roles.last?.0 == .lost && o.pictures.count == 3)
        #expect(ds.status.radarFrames == 3)
    }

    @Test func aBLERadarIsARadarByItsKindAndOthersMakeNoPictures() {
        var ds = DataSource(DataSourceConfiguration(sensors: [PairedSensor(Self.strap, kind: .heartRate),
                                                              PairedSensor(Self.bleRadar, kind: .radar, priority: 1)]))
        var o = Out()
        ds.start(at: ms(0)) { o.take($0) }
        ds.handle(Self.frame(Self.bleRadar, 0x3203, "62e38200"), at: ms(100)) { o.take($0) }
        ds.handle(Self.frame(Self.bleRadar, 0x2A19, "5a"), at: ms(150)) { o.take($0) }
        ds.handle(Self.frame(Self.bleRadar, 0x3203, "72"), at: ms(200)) { o.take($0) }
        #expect(o.pictures.map(\.count) == [1, 0] && o.roles.last?.0 == .connected && o.roles.last?.1 == 90)
        // A strap's payload on the radar's characteristic decodes, but a strap is no radar.
        ds.handle(Self.frame(Self.strap, 0x3203, "62e38200"), at: ms(300)) { o.take($0) }
        #expect(o.pictures.count == 2)
        // An unpaired radar is counted, not shown.
        ds.handle(Self.frame(.ble(BLEAddress("01:02:03:04:05:06")!), 0x3203, "62e38200"), at: ms(400)) { o.take($0) }
        #expect(o.pictures.count == 2 && ds.status.bad[.unpairedSensor] == 1)
    }

    @Test func ofTwoRadarsTheOneListedFirstIsShownWhileItReports() {
        var ds = DataSource(DataSourceConfiguration(sensors: [PairedSensor(Self.antRadar, priority: 0),
                                                              PairedSensor(Self.bleRadar, kind: .radar, priority: 1)]))
        var o = Out()
        ds.handle(Self.frame(Self.antRadar, 40, "3000000000000000"), at: ms(0)) { o.take($0) }
        ds.handle(Self.frame(Self.bleRadar, 0x3203, "62e38200"), at: ms(100)) { o.take($0) }
        #expect(o.pictures.map(\.count) == [0], "the first radar reports: the second is not shown")
        ds.handle(Self.frame(Self.bleRadar, 0x3203, "62e38200"), at: ms(3_100)) { o.take($0) }
        #expect(o.pictures.map(\.count) == [0, 1], "the first fell silent: the second takes over")
    }
}
