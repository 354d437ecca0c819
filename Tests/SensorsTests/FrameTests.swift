import TestSupport
import Testing
import RideModel
@testable import Sensors

@Suite struct FrameTests {
    static let hrm = SourceIdentity.ant(deviceNumber: 0x1234, deviceType: 120, transmissionType: 1)
    static let pm = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22", isRandom: true)!)

    @Test func dataFrameByteLayout() throws {
        let f = BridgeFrame(bridgeTimeUs: 0x0102030405, .data(Self.hrm, profileCode: 120, hexPayload("04 ff 00 fe 00 01 07 48")))
        let bytes = f.encoded().bytes
        #expect(bytes == [1, 3, 5, 4, 3, 2, 1, 0, 0, 0,  1, 0x34, 0x12, 120, 1, 0, 0, 0,  120, 0,  8,
                          4, 0xff, 0, 0xfe, 0, 1, 7, 0x48])
        #expect(try BridgeFrame.parse(bytes) == f)
    }

    @Test func bleLinkHelloHeartbeatRoundTrip() throws {
        let frames = [
            BridgeFrame(bridgeTimeUs: 7, .link(Self.pm, profileCode: 0x2A63, .connected)),
            BridgeFrame(bridgeTimeUs: 8, .hello(protocolVersionMax: 1, radios: 3, bridgeID: 0xDEADBEEF)),
            BridgeFrame(bridgeTimeUs: 9, .heartbeat(sequence: 42)),
            BridgeFrame(bridgeTimeUs: 10, .data(Self.pm, profileCode: 0x2A63, hexPayload("00 00 fa 00"))),
        ]
        for f in frames { #expect(try BridgeFrame.parse(f.encoded().bytes) == f) }
        let link = frames[0].encoded().bytes
        #expect(Array(link[10..<18]) == [2, 0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22, 1])
        #expect(Self.pm.description == "ble:C0:FF:EE:00:11:22/random")
    }

    @Test func malformedFramesAreTypedErrors() {
        func kind(_ b: [UInt8]) -> BadInput? {
            do { _ = try BridgeFrame.parse(b); return nil } catch { return error.kind }
        }
        let good = BridgeFrame(bridgeTimeUs: 1, .data(Self.hrm, profileCode: 120, hexPayload("00 00 00 00 00 00 00 48"))).encoded().bytes
        #expect(kind(good) == nil)
        #expect(kind([]) == .malformedFrame)
        #expect(kind([BridgeFrame.versionMax + 1] + good.dropFirst()) == .badVersion, "a version newer than this app speaks")
        #expect(kind([0] + good.dropFirst()) == .badVersion)
        #expect(kind([1, 9] + good.dropFirst(2)) == .badFrameKind)
        #expect(kind(Array(good.dropLast())) == .malformedFrame)
        #expect(kind(good + [0]) == .malformedFrame)
        var badTransport = good; badTransport[10] = 7
        #expect(kind(badTransport) == .malformedFrame)
        var tooLong = good; tooLong[20] = 200
        #expect(kind(tooLong) == .malformedFrame)
    }

    /// Version 2: the same bytes as the Python bridge's `test_version_2_golden_bytes`.
    @Test func version2GoldenBytes() throws {
        let pm = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)
        let found = BridgeFrame(bridgeTimeUs: 0x0102030405, .found(FoundSensorFrame(pm, profileCode: 3, rssi: -60, name: SensorName("Crank PM"))))
        #expect(found.encoded().bytes == [2, 5, 5, 4, 3, 2, 1, 0, 0, 0, 2, 0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22, 0, 3, 0, 0xC4, 8] + Array("Crank PM".utf8))
        let ant = BridgeFrame(bridgeTimeUs: 1, .found(FoundSensorFrame(.ant(deviceNumber: 12345, deviceType: 11, transmissionType: 5), profileCode: 11, rssi: nil, name: SensorName())))
        #expect(ant.encoded().bytes == [2, 5, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x39, 0x30, 11, 5, 0, 0, 0, 11, 0, 127, 0])
        #expect(BridgeFrame(bridgeTimeUs: 7, .scanState(running: true, radios: 3, found: 4)).encoded().bytes == [2, 6, 7, 0, 0, 0, 0, 0, 0, 0, 1, 3, 4, 0])
        #expect(BridgeFrame(bridgeTimeUs: 7, .appHello(protocolVersionMax: 2, flags: BridgeFrame.appTakesSockets)).encoded().bytes
                == [2, 7, 7, 0, 0, 0, 0, 0, 0, 0, 2, 1])
        #expect(BridgeFrame(bridgeTimeUs: 7, .scanRequest(start: true, radios: 2, seconds: 30)).encoded().bytes == [2, 8, 7, 0, 0, 0, 0, 0, 0, 0, 1, 2, 30, 0])
        #expect(BridgeFrame(bridgeTimeUs: 7, .reload).encoded().bytes == [2, 9, 7, 0, 0, 0, 0, 0, 0, 0])
        #expect(BridgeFrame(bridgeTimeUs: 7, .notificationSocket(pm, profileCode: 0x2A63)).encoded().bytes
                == [2, 10, 7, 0, 0, 0, 0, 0, 0, 0, 2, 0xC0, 0xFF, 0xEE, 0x00, 0x11, 0x22, 0, 0x63, 0x2A])
        let unusable = BridgeFrame(bridgeTimeUs: 7, .link(pm, profileCode: 0, .unusable)).encoded().bytes
        #expect(unusable[0] == 2 && unusable[20] == 3)
        for f in [found, ant, BridgeFrame(bridgeTimeUs: 9, .socketReturned(pm, profileCode: 0x2A37)),
                  BridgeFrame(bridgeTimeUs: 9, .link(pm, profileCode: 0, .unusable))] {
            #expect(try BridgeFrame.parse(f.encoded().bytes) == f)
        }
    }

    @Test func version2FramesThatCannotBe() {
        func kind(_ b: [UInt8]) -> BadInput? {
            do { _ = try BridgeFrame.parse(b); return nil } catch { return error.kind }
        }
        let pm = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)
        let reload = BridgeFrame(bridgeTimeUs: 1, .reload).encoded().bytes
        #expect(kind([1] + reload.dropFirst()) == .badFrameKind, "a version-2 kind in a version-1 frame")
        let found = BridgeFrame(bridgeTimeUs: 1, .found(FoundSensorFrame(pm, profileCode: 1, rssi: 0, name: SensorName("HRM")))).encoded().bytes
        #expect(kind(Array(found.dropLast())) == .malformedFrame, "name cut short")
        var longName = found; longName[21] = 25
        #expect(kind(longName + Array(repeating: 65, count: 22)) == .malformedFrame)
        let unusable = BridgeFrame(bridgeTimeUs: 1, .link(pm, profileCode: 0, .unusable)).encoded().bytes
        #expect(kind([1] + unusable.dropFirst()) == .malformedFrame, "link state 3 needs version 2")
        #expect(kind(BridgeFrame(bridgeTimeUs: 1, .scanState(running: true, radios: 2, found: 0)).encoded().bytes.dropLast().map { $0 }) == .malformedFrame)
        // Names: cut at a character boundary, never more than 24 bytes.
        let n = SensorName("Puissance pédalier ÉÉÉÉÉÉ")
        #expect(n.count <= SensorName.bytesMax && "Puissance pédalier ÉÉÉÉÉÉ".hasPrefix(n.text))
    }

    @Test func crcCheckValue() {
        let crc = Array("123456789".utf8).withUnsafeBytes { crc16CCITT($0) }
        #expect(crc == 0x29B1)
    }

    @Test func serialRoundTripAndResyncAfterGarbage() {
        var rng = SeededGenerator(seed: 77)
        var frames: [BridgeFrame] = []
        for i in 0..<50 {
            var p = Payload()
            for _ in 0..<Int.random(in: 0...Payload.bytesMax, using: &rng) { p.append(UInt8.random(in: 0...255, using: &rng)) }
            frames.append(BridgeFrame(bridgeTimeUs: UInt64(i), .data(Self.pm, profileCode: 0x2A37, p)))
        }
        var stream: [UInt8] = [0x55, 0x13, 0x00, 0xFF, 0xFF]  // garbage, then a partial record
        for (i, f) in frames.enumerated() {
            stream += SerialFraming.encode(f).bytes
            if i % 7 == 3 { stream += [0x42, 0x00] }  // a one-byte garbage record
        }
        var out: [BridgeFrame] = []
        var deframer = SerialDeframer()
        // Feed in uneven chunks.
        var i = 0
        while i < stream.count {
            let n = min(stream.count - i, Int.random(in: 1...40, using: &rng))
            deframer.feed(Array(stream[i..<(i + n)])) { out.append($0) }
            i += n
        }
        // The first real frame follows the garbage record "FF FF" + its encoding: lost with it.
        #expect(out.count >= frames.count - 1)
        #expect(Array(frames.suffix(out.count)) == out)
        #expect(deframer.bad.total >= 8)
    }

    @Test func serialCorruptByteDropsOnlyThatFrame() {
        let a = BridgeFrame(bridgeTimeUs: 1, .heartbeat(sequence: 1))
        let b = BridgeFrame(bridgeTimeUs: 2, .heartbeat(sequence: 2))
        var ea = SerialFraming.encode(a).bytes
        ea[12] ^= 0x80
        var d = SerialDeframer()
        var out: [BridgeFrame] = []
        d.feed(ea + SerialFraming.encode(b).bytes) { out.append($0) }
        #expect(out == [b])
        #expect(d.bad[.serialChecksum] + d.bad[.serialEncoding] == 1)
    }

    @Test func serialOversizeIsCountedAndRecovers() {
        var d = SerialDeframer()
        var out: [BridgeFrame] = []
        let b = BridgeFrame(bridgeTimeUs: 2, .heartbeat(sequence: 2))
        d.feed(Array(repeating: 0x11, count: 500) + [0] + SerialFraming.encode(b).bytes) { out.append($0) }
        #expect(out == [b])
        #expect(d.bad[.serialOversize] == 1)
    }

    @Test func cobsHandlesZeroRunsAndLongRuns() {
        // A payload of 64 zeros and one of 64 non-zeros both survive.
        for fill: UInt8 in [0, 0xAB] {
            let f = BridgeFrame(bridgeTimeUs: 0, .data(Self.hrm, profileCode: 120, Payload(Array(repeating: fill, count: 64))!))
            let enc = SerialFraming.encode(f).bytes
            #expect(enc.count <= SerialFraming.encodedBytesMax)
            #expect(enc.dropLast().allSatisfy { $0 != 0 })
            var d = SerialDeframer()
            var out: [BridgeFrame] = []
            d.feed(enc) { out.append($0) }
            #expect(out == [f])
        }
    }
}
