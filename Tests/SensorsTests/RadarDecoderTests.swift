import RideModel
import Testing
@testable import Sensors

/// The rear radar decoders against captures (Corpus/radar, each with its source): the ANT+ Bike
/// Radar's target pages (the bit order decided by a real page), Garmin Varia's BLE
/// notifications (a real RearVue 820 session), fragments, eight vehicles, the clear road, and
/// what a malformed payload does.
@Suite struct RadarDecoderTests {
    static func lines(_ name: String) -> [[Substring]] {
        FuzzTests.readLines("radar/" + name).map { $0.split(separator: " ") }
    }

    /// "9.375/0/approaching/behind" as a target.
    static func target(_ text: Substring) -> RadarTarget {
        let f = text.split(separator: "/")
        return RadarTarget(rangeM: Double(f[0])!, closingSpeedMps: Double(f[1])!, threat: RadarThreat.allCases.first { $0.description == f[2] }!,
                           side: RadarSide.allCases.first { $0.description == f[3] })
    }

    static func same(_ a: RadarPicture?, _ b: [RadarTarget]) -> Bool {
        guard let a, a.count == b.count else { return false }
        for i in 0..<a.count {
            let x = a[i], y = b[i]
            guard abs(x.rangeM - y.rangeM) < 1e-9, abs((x.closingSpeedMps ?? -1) - (y.closingSpeedMps ?? -1)) < 0.005,
                  x.threat == y.threat, x.side == y.side else { return false }
        }
        return true
    }

    @Test func antPagesDecodeAsTheCaptureAndTheLayoutSay() throws {
        let lines = Self.lines("ant-bike-radar-pages.txt")
        #expect(lines.count >= 7, "fixture missing under \(FuzzTests.corpusDir)radar")
        #expect(lines.first?.first == "captured")
        var d = SensorDecoder(profile: .antBikeRadar)
        var t: Int64 = 0
        for line in lines {
            t += 125
            var fields = FieldRecorder()
            let v = try d.decode(hexPayload(String(line[1])), at: ms(t), fields: &fields)
            #expect(v.warnings == 0, "\(line)")
            switch line.count > 2 ? line[2] : "-" {
            case "shutdown":
                #expect(v.radarShutdown && v.radar == nil)
            case let s where s.hasPrefix("battery_percent="):
                #expect(v.batteryPercent == Int(s.dropFirst("battery_percent=".count)) && v.radar == nil)
            default:
                let expected = line.dropFirst(2).filter { $0 != "-" }.map(Self.target)
                #expect(Self.same(v.radar, expected), "\(line): \(String(describing: v.radar))")
                // The fields `decode` prints: one record per vehicle, nearest first.
                v.visitFields(&fields)
                #expect(fields.records["targets"]?.map { $0.doubles["range_m"]! } == expected.map(\.rangeM))
            }
        }
    }

    /// The bit-order dispute, decided by the captured page: least significant first gives vehicles
    /// nearest first within reach; the other order would not.
    @Test func theCapturedPageReadsLeastSignificantFirst() throws {
        let page = hexPayload("301500c382894004")
        guard case let .targets(first, t) = try ANTRadarPage.parse(page) else { Issue.record("not a targets page"); return }
        #expect(first == 0)
        let ranges = (0..<4).filter { t[$0].threatLevel != 0 }.map { Double(t[$0].range) * ANTRadarField.rangeStepM }
        #expect(ranges == ranges.sorted() && ranges.allSatisfy { $0 <= RadarPicture.reachM } && ranges.count == 3)
        // Most significant first: threat bits 00 01 01 01 and ranges 48, 56, 10, 9.
        let msbRanges = [56.0, 10, 9].map { $0 * ANTRadarField.rangeStepM }
        #expect(msbRanges != msbRanges.sorted() && msbRanges.contains { $0 > RadarPicture.reachM })
    }

    @Test func pageBTargetsAgeOutAndAFreeSlotOnPageAClearsThem() throws {
        var d = SensorDecoder(profile: .antBikeRadar)
        let full = hexPayload("30561242c1504f64"), b = hexPayload("3159249a87ca5312")
        _ = try d.decode(full, at: ms(0))
        #expect(try d.decode(b, at: ms(125)).radar?.count == 8)
        #expect(try d.decode(full, at: ms(500)).radar?.count == 8, "page 49 still stands")
        #expect(try d.decode(full, at: ms(1_200)).radar?.count == 4, "page 49 not heard for over a second")
        #expect(try d.decode(b, at: ms(1_300)).radar?.count == 8)
        #expect(try d.decode(hexPayload("3001012800000200"), at: ms(1_400)).radar?.count == 1, "page 48 with free slots: no vehicle on page 49")
        #expect(try d.decode(hexPayload("3000000000000000"), at: ms(1_500)).radar?.isClear == true)
    }

    @Test func antOtherPagesAreCountedNotGuessed() throws {
        var d = SensorDecoder(profile: .antBikeRadar)
        #expect(throws: DecodeError(.unknownPage, have: 0x02)) { try d.decode(hexPayload("0200ffffffffffff"), at: ms(0)) }
        #expect(throws: DecodeError(.truncated, need: 8, have: 7)) { try d.decode(hexPayload("30000000000000"), at: ms(0)) }
        // A reserved threat level (3) is still a vehicle, and counted.
        let v = try d.decode(hexPayload("3003000a00000000"), at: ms(0))
        #expect(v.has(.reservedFlags) && v.radar?.count == 1)
    }

    /// The RearVue 820 session: heartbeats are a clear road, the vehicle's range is as sent, its
    /// closing speed (not in this radar's third byte) is estimated from the range over a second.
    @Test func variaCaptureDecodes() throws {
        let lines = Self.lines("varia-rearvue820-3203.log")
        #expect(lines.count > 20)
        var d = SensorDecoder(profile: .bleRadar)
        var first: (ms: Int64, range: Double)?
        var estimates = 0
        for line in lines {
            let t = Int64(line[0])!
            let bytes = hexPayload(String(line[2]))
            let v = try d.decode(bytes, at: ms(t))
            #expect(v.warnings == 0)
            let picture = try #require(v.radar)
            if bytes.count == 1 {
                #expect(picture.isClear)
                continue
            }
            #expect(picture.count == 1)
            let range = Double(bytes[2])
            #expect(picture[0].rangeM == range)
            guard let f = first else { first = (t, range); #expect(picture[0].closingSpeedMps == nil); continue }
            if let s = picture[0].closingSpeedMps {
                estimates += 1
                // Independently: the whole approach's mean closing speed.
                let mean = (f.range - range) * 1000 / Double(t - f.ms)
                #expect(abs(s - mean) < 6, "estimate \(s) m/s against the approach's mean \(mean)")
                #expect(picture[0].threat == RadarThreatRule.threat(closingSpeedMps: s))
            } else {
                #expect(t - f.ms < RadarTrack.estimateWindowMs + 300, "an estimate within a window")
            }
        }
        #expect(estimates > 10)
    }

    @Test func variaKilometresPerHourAndTheThreat() throws {
        var d = SensorDecoder(profile: .bleRadar)
        // An RTL515 reports the closing speed in km/h in the third byte.
        var v = try d.decode(hexPayload("02013224"), at: ms(0))
        #expect(v.radar?[0].rangeM == 50 && v.radar?[0].closingSpeedMps == 10 && v.radar?[0].threat == .approaching)
        v = try d.decode(hexPayload("12013230"), at: ms(100))
        #expect(abs((v.radar?[0].closingSpeedMps ?? 0) - 48 / 3.6) < 1e-9 && v.radar?[0].threat == .fastApproach)
        // Padding and markers are not vehicles.
        v = try d.decode(hexPayload("22000000fd000007ff00"), at: ms(200))
        #expect(v.radar?.isClear == true)
    }

    @Test func fragmentsAreJoinedAndALostOneIsCounted() throws {
        var d = SensorDecoder(profile: .bleRadar)
        // Header, then vehicles `ids`: track i at 10·i m, closing at 40 km/h.
        func notification(_ header: UInt8, _ ids: ClosedRange<UInt8>) -> Payload { payload([header] + ids.flatMap { [$0, 10 * $0, 40] }) }
        let six = notification(0x40, 1...6), two = notification(0x42, 7...8)
        var v = try d.decode(six, at: ms(0))
        #expect(v.radar == nil, "a first fragment waits for its last")
        v = try d.decode(two, at: ms(50))
        #expect(v.radar?.count == 8 && v.warnings == 0)
        #expect((0..<8).map { v.radar![$0].rangeM } == (1...8).map { Double(10 * $0) })
        // A first fragment whose last never comes: the next frame stands alone, the loss is counted.
        _ = try d.decode(six, at: ms(100))
        v = try d.decode(hexPayload("520b6428"), at: ms(150))
        #expect(v.radar?.count == 1 && v.has(.truncated))
        // More than eight vehicles: the nearest eight, counted.
        _ = try d.decode(notification(0x60, 1...6), at: ms(200))
        v = try d.decode(notification(0x62, 7...12), at: ms(250))
        #expect(v.radar?.count == RadarPicture.targetsMax && v.has(.absurdValue))
    }

    @Test func variaMalformedNotificationsAreErrors() throws {
        var d = SensorDecoder(profile: .bleRadar)
        #expect(throws: DecodeError.self) { try d.decode(hexPayload("0201"), at: ms(0)) }
        #expect(throws: DecodeError.self) { try d.decode(Payload(), at: ms(0)) }
        #expect(throws: DecodeError.self) { try d.decode(hexPayload("02" + String(repeating: "010a28", count: 7)), at: ms(0)) }
        // The RearVue's diagnostic packet is not an error and not a picture.
        let v = try d.decode(hexPayload("06300000002a"), at: ms(0))
        #expect(v.radar == nil && v.warnings == 0)
    }

    @Test func profilesAndKindsAgree() {
        #expect(Profile(transport: .ant, code: UInt16(SensorKind.radar.antDeviceType)) == .antBikeRadar)
        #expect(Profile(transport: .ble, code: SensorKind.radar.bleMeasurements[0]) == .bleRadar)
        #expect(SensorKind.bleProfileCode(uuid: "6a4e3203") == 0x3203)
        #expect(SensorKind.bleProfileCode(uuid: "6A4E3203-667B-11E3-949A-0800200C9A66") == 0x3203)
        #expect(SensorKind.bleProfileCode(uuid: "2a37") == 0x2A37 && SensorKind.bleProfileCode(uuid: "0x2A63") == 0x2A63)
        #expect(SensorKind.bleProfileCode(uuid: "00002a19-0000-1000-8000-00805f9b34fb") == 0x2A19)
        #expect(SensorKind.bleProfileCode(uuid: "6a4e32") == nil && SensorKind.bleProfileCode(uuid: "zz") == nil)
    }
}
