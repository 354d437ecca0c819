import Testing
import RideModel
@testable import Sensors

@Suite struct ANTDecoderTests {
    @Test func heartRatePagesParse() throws {
        let p4 = try ANTHeartRatePage.parse(hexPayload("84 ff 00 fe 00 01 07 48"))
        #expect(p4.page == 4 && p4.toggle)
        #expect(p4.previousEventTime1024 == 0xFE00)
        #expect(p4.eventTime1024 == 0x0100 && p4.beatCount == 7 && p4.heartRateBpm == 72)
        let p7 = try ANTHeartRatePage.parse(hexPayload("07 55 80 32 00 00 00 00"))
        #expect(p7.battery?.percent == 0x55)
        #expect(p7.battery?.status == .ok)
        #expect(p7.battery?.voltageV == 2.5)
        let p1 = try ANTHeartRatePage.parse(hexPayload("01 10 00 00 00 00 00 00"))
        #expect(p1.operatingTimeS == 32)
        let p2 = try ANTHeartRatePage.parse(hexPayload("02 01 34 12 00 00 00 00"))
        #expect(p2.manufacturerID == 1 && p2.serialNumberHigh == 0x1234)
        #expect(throws: DecodeError.self) { try ANTHeartRatePage.parse(hexPayload("04 00 00 00 00 00 00")) }
        #expect(throws: DecodeError.self) { try ANTHeartRatePage.parse(hexPayload("04 00 00 00 00 00 00 00 00")) }
    }

    @Test func heartRateToggleGatesPageDataAndRRFromPage4() throws {
        var d = SensorDecoder(profile: .antHeartRate)
        // Legacy-looking start: toggle never changed yet → page 4 field not trusted; beat count +1
        // gives RR from the last event time instead: (0x0200 - 0xFF00) mod 65536 = 0x300 = 0.75 s.
        _ = try d.decode(hexPayload("04 ff 00 00 00 ff 05 50"), at: ms(0))
        var v = try d.decode(hexPayload("04 ff 00 10 00 02 06 50"), at: ms(250))
        #expect(v.rrCount == 1 && v.rrIntervalS(0) == 0.75)
        #expect(v.heartRateBpm == 80)
        // Toggle flips → pages trusted; page 4 RR = event − previous = 0x0100 − 0xFE00 = 0x300.
        v = try d.decode(hexPayload("84 ff 00 fe 00 01 07 50"), at: ms(500))
        #expect(v.rrCount == 1 && v.rrIntervalS(0) == 0.75)
        // Same beat: no RR.
        v = try d.decode(hexPayload("84 ff 00 fe 00 01 07 50"), at: ms(750))
        #expect(v.rrCount == 0)
        // Battery from page 7 once trusted.
        v = try d.decode(hexPayload("87 40 00 13 00 01 07 50"), at: ms(1000))
        #expect(v.batteryPercent == 64)
        // HR 0 = no reading; 255 = absurd.
        #expect(try d.decode(hexPayload("84 ff 00 fe 00 01 07 00"), at: ms(1250)).heartRateBpm == nil)
        let bad = try d.decode(hexPayload("84 ff 00 fe 00 01 07 ff"), at: ms(1500))
        #expect(bad.heartRateBpm == nil && bad.has(.absurdValue))
    }

    @Test func powerPagesParse() throws {
        guard case let .powerOnly(e, pedal, cad, acc, inst) = try ANTPowerPage.parse(hexPayload("10 05 b2 5a 34 12 fa 00")) else {
            Issue.record("not 0x10"); return
        }
        #expect(e == 5 && pedal == 0xB2 && cad == 90 && acc == 0x1234 && inst == 250)
        guard case let .torque(crank, _, ticks, cad2, period, torque) = try ANTPowerPage.parse(hexPayload("12 01 02 ff 00 08 40 06")) else {
            Issue.record("not 0x12"); return
        }
        #expect(crank && ticks == 2 && cad2 == nil && period == 0x800 && torque == 0x640)
        guard case let .torqueEffectivenessAndSmoothness(_, lte, rte, lps, rps, combined) = try ANTPowerPage.parse(hexPayload("13 01 a0 ff 40 fe ff ff")) else {
            Issue.record("not 0x13"); return
        }
        #expect(lte == 0xA0 && rte == nil && lps == 0x40 && rps == nil && combined)
        guard case let .common(.manufacturer(hw, mfr, model)) = try ANTPowerPage.parse(hexPayload("50 ff ff 03 01 00 34 12")) else {
            Issue.record("not 0x50"); return
        }
        #expect(hw == 3 && mfr == 1 && model == 0x1234)
        guard case let .common(.product(sup, main, serial)) = try ANTPowerPage.parse(hexPayload("51 ff 02 0a 78 56 34 12")) else {
            Issue.record("not 0x51"); return
        }
        #expect(sup == 2 && main == 10 && serial == 0x12345678)
        guard case let .common(.battery(_, time, b)) = try ANTPowerPage.parse(hexPayload("52 ff 00 05 00 00 80 a3")) else {
            Issue.record("not 0x52"); return
        }
        #expect(time == 10 && b.status == .good && b.voltageV == 3.5)
        #expect(throws: DecodeError.self) { try ANTPowerPage.parse(hexPayload("20 00 00 00 00 00 00 00")) }
    }

    @Test func powerOnlyDecoderAverageHoldAndZero() throws {
        var d = SensorDecoder(profile: .antBikePower)
        var v = try d.decode(hexPayload("10 01 b2 5a 00 00 c8 00"), at: ms(0))
        #expect(v.powerW == 200 && v.cadenceRpm == 90 && v.pedalBalanceRightPercent == 50)
        // 2 events, 500 W accumulated → 250 W average.
        v = try d.decode(hexPayload("10 03 ff 5a f4 01 00 01"), at: ms(500))
        #expect(v.averagePowerW == 250 && v.powerW == 250 && v.pedalBalanceRightPercent == nil)
        v = try d.decode(hexPayload("10 03 ff 5a f4 01 00 01"), at: ms(2000))
        #expect(v.powerW == 250)
        v = try d.decode(hexPayload("10 03 ff 00 f4 01 00 00"), at: ms(3500))
        #expect(v.powerW == 0)
    }

    @Test func teAndPsDecoder() throws {
        var d = SensorDecoder(profile: .antBikePower)
        let v = try d.decode(hexPayload("13 01 a0 9c 50 60 ff ff"), at: ms(0))
        #expect(v.torqueEffectivenessLeftPercent == 80 && v.torqueEffectivenessRightPercent == 78)
        #expect(v.pedalSmoothnessLeftPercent == 40 && v.pedalSmoothnessRightPercent == 48)
        let c = try d.decode(hexPayload("13 01 a0 9c 50 fe ff ff"), at: ms(250))
        #expect(c.pedalSmoothnessLeftPercent == 40 && c.pedalSmoothnessRightPercent == nil)
    }

    @Test func speedCadenceParse() throws {
        let m = try ANTSpeedCadencePage.parse(hexPayload("00 04 0a 00 00 08 64 00"))
        #expect(m.cadenceEventTime1024 == 0x400 && m.crankRevolutions == 10)
        #expect(m.speedEventTime1024 == 0x800 && m.wheelRevolutions == 100)
        let s = try ANTSpeedOrCadencePage.parse(hexPayload("85 01 00 00 00 04 0a 00"))
        #expect(s.page == 5 && s.toggle && s.stopped == true && s.eventTime1024 == 0x400 && s.revolutions == 10)
        let b = try ANTSpeedOrCadencePage.parse(hexPayload("04 ff 80 22 00 00 00 00"))
        #expect(b.battery?.status == .good && b.battery?.voltageV == 2.5)
    }

    @Test func speedPage5StopIndicatorZeroesAtOnce() throws {
        var d = SensorDecoder(profile: .antSpeed, wheelCircumferenceMm: 2000)
        _ = try d.decode(hexPayload("00 ff ff ff 00 00 00 00"), at: ms(0))
        #expect(approx(try d.decode(hexPayload("80 ff ff ff 00 04 02 00"), at: ms(1000)).speedMps, 4))
        // Same event, no stop flag (page 0): held.
        #expect(approx(try d.decode(hexPayload("80 ff ff ff 00 04 02 00"), at: ms(1250)).speedMps, 4))
        // Page 5 with the stop bit, same event: zero now, long before the 4 s zero time.
        #expect(try d.decode(hexPayload("85 01 ff ff 00 04 02 00"), at: ms(1500)).speedMps == 0)
        // Page 5 without the stop bit does not zero.
        var e = SensorDecoder(profile: .antSpeed, wheelCircumferenceMm: 2000)
        _ = try e.decode(hexPayload("00 ff ff ff 00 00 00 00"), at: ms(0))
        _ = try e.decode(hexPayload("80 ff ff ff 00 04 02 00"), at: ms(1000))
        #expect(approx(try e.decode(hexPayload("85 00 ff ff 00 04 02 00"), at: ms(1250)).speedMps, 4))
    }
}
