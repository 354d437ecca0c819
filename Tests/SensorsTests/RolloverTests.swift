import Testing
import RideModel
@testable import Sensors

/// Each counter at its wrap, with the expected rate computed by hand in the comment.
@Suite struct RolloverTests {
    @Test func wrappingDeltaWidths() {
        #expect(wrappingDelta(1, 0xFF, bits: 8) == 2)
        #expect(wrappingDelta(0x0001, 0xFFFF, bits: 16) == 2)
        #expect(wrappingDelta(0x01, 0xFFFF_FFFE, bits: 32) == 3)
        #expect(wrappingDelta(5, 5, bits: 16) == 0)
    }

    func csc(wheel: UInt32? = nil, wt: UInt16 = 0, crank: UInt16? = nil, ct: UInt16 = 0) -> Payload {
        var w = LE()
        w.u8((wheel != nil ? 1 : 0) | (crank != nil ? 2 : 0))
        if let wheel { w.u32(wheel); w.u16(wt) }
        if let crank { w.u16(crank); w.u16(ct) }
        return payload(w.bytes)
    }

    @Test func bleCSCWheel32BitWrap() throws {
        var d = SensorDecoder(profile: .bleSpeedCadence, wheelCircumferenceMm: 2000)
        _ = try d.decode(csc(wheel: 0xFFFF_FFFE, wt: 0xFF00), at: ms(0))
        // Δrev = 3, Δt = 0x0300 − 0xFF00 = 0x0400 = 1024 = 1 s → 3 rev/s × 2 m = 6 m/s; 6 m.
        let v = try d.decode(csc(wheel: 0x0000_0001, wt: 0x0300), at: ms(1000))
        #expect(approx(v.speedMps, 6))
        #expect(approx(v.distanceM, 6))
    }

    @Test func bleCSCCrank16BitWrap() throws {
        var d = SensorDecoder(profile: .bleSpeedCadence)
        _ = try d.decode(csc(crank: 0xFFFF, ct: 0xFE00), at: ms(0))
        // Δrev = 2, Δt = 0x0200 − 0xFE00 = 0x400 = 1 s → 120 rpm.
        let v = try d.decode(csc(crank: 0x0001, ct: 0x0200), at: ms(1000))
        #expect(approx(v.cadenceRpm, 120))
    }

    @Test func cpsWheelTime2048Wrap() throws {
        var d = SensorDecoder(profile: .bleCyclingPower, wheelCircumferenceMm: 2000)
        func p(_ revs: UInt32, _ t: UInt16) -> Payload { var w = LE(); w.u16(0x10); w.s16(100); w.u32(revs); w.u16(t); return payload(w.bytes) }
        _ = try d.decode(p(0xFFFF_FFFF, 0xFC00), at: ms(0))
        // Δrev = 2, Δt = 0x0400 − 0xFC00 = 0x800 = 2048 = 1 s (1/2048 s units) → 2 rev/s × 2 m = 4 m/s.
        let v = try d.decode(p(0x1, 0x0400), at: ms(1000))
        #expect(approx(v.speedMps, 4))
        #expect(approx(v.wheelRpm, 120))
    }

    @Test func antPowerOnlyEventAndAccumulatedPowerWrap() throws {
        var d = SensorDecoder(profile: .antBikePower)
        _ = try d.decode(hexPayload("10 ff ff ff f0 ff 00 00"), at: ms(0))
        // ΔE = 0x01 − 0xFF = 2; ΔP = 0x0180 − 0xFFF0 = 0x190 = 400 → 200 W.
        let v = try d.decode(hexPayload("10 01 ff ff 80 01 00 00"), at: ms(500))
        #expect(v.averagePowerW == 200)
    }

    @Test func antCrankTorqueWrap() throws {
        var d = SensorDecoder(profile: .antBikePower)
        _ = try d.decode(hexPayload("12 fe 00 ff 00 f8 00 ff"), at: ms(0))
        // ΔE = 2, Δperiod = 0x0800 − 0xF800 = 0x1000 = 4096 (2 s) → 60 rpm;
        // Δtorque = 0x0C00 − 0xFF00 = 0xD00 = 3328 → 52 Nm per rev; power = 128π·3328/4096 = 104π W.
        let v = try d.decode(hexPayload("12 00 00 ff 00 08 00 0c"), at: ms(500))
        #expect(approx(v.cadenceRpm, 60))
        #expect(approx(v.torqueNm, 52))
        #expect(approx(v.powerW, 104 * Double.pi))
    }

    @Test func antWheelTorqueWrap() throws {
        var d = SensorDecoder(profile: .antBikePower, wheelCircumferenceMm: 2000)
        _ = try d.decode(hexPayload("11 ff fe ff 00 fc 00 00"), at: ms(0))
        // ΔE = 2, Δticks = 0x02 − 0xFE = 4, Δperiod = 0x0400 − 0xFC00 = 0x800 (1 s) → 120 rpm → 4 m/s; 4 × 2 m = 8 m.
        let v = try d.decode(hexPayload("11 01 02 ff 00 04 20 00"), at: ms(500))
        #expect(approx(v.wheelRpm, 120))
        #expect(approx(v.speedMps, 4))
        #expect(approx(v.distanceM, 8))
    }

    @Test func antSpeedCadenceWrap() throws {
        var d = SensorDecoder(profile: .antSpeedCadence, wheelCircumferenceMm: 2000)
        // cadence time 0xFF00 revs 0xFFFF; speed time 0xF000 revs 0xFFFE.
        _ = try d.decode(hexPayload("00 ff ff ff 00 f0 fe ff"), at: ms(0))
        // crank: Δ = 1 in 0x0100 − 0xFF00 = 0x200 = 0.5 s → 120 rpm.
        // wheel: Δ = 4 in 0x0800 − 0xF000 = 0x1800 = 6 s → 2/3 rev/s × 2 m = 1.333 m/s; 8 m.
        let v = try d.decode(hexPayload("00 01 00 00 00 08 02 00"), at: ms(1000))
        #expect(approx(v.cadenceRpm, 120))
        #expect(approx(v.speedMps, 4.0 / 3))
        #expect(approx(v.distanceM, 8))
    }

    @Test func antSpeedOnlyAndCadenceOnlyWrap() throws {
        var s = SensorDecoder(profile: .antSpeed, wheelCircumferenceMm: 2000)
        _ = try s.decode(hexPayload("00 ff ff ff 00 ff ff ff"), at: ms(0))
        // Δ = 3 in 0x0300 − 0xFF00 = 0x400 (1 s) → 6 m/s.
        #expect(approx(try s.decode(hexPayload("80 ff ff ff 00 03 02 00"), at: ms(1000)).speedMps, 6))
        var c = SensorDecoder(profile: .antCadence)
        _ = try c.decode(hexPayload("00 ff ff ff 00 fc ff ff"), at: ms(0))
        // Δ = 1 in 0x0000 − 0xFC00 = 0x400 (1 s) → 60 rpm.
        #expect(approx(try c.decode(hexPayload("00 ff ff ff 00 00 00 00"), at: ms(1000)).cadenceRpm, 60))
    }

    @Test func holdThenZeroThenSpike() throws {
        var d = SensorDecoder(profile: .bleSpeedCadence)
        _ = try d.decode(csc(crank: 10, ct: 0), at: ms(0))
        #expect(approx(try d.decode(csc(crank: 11, ct: 512), at: ms(500)).cadenceRpm, 120))
        // Same event: held.
        #expect(approx(try d.decode(csc(crank: 11, ct: 512), at: ms(3400)).cadenceRpm, 120))
        // 3 s after the last event: zero.
        #expect(try d.decode(csc(crank: 11, ct: 512), at: ms(3500)).cadenceRpm == 0)
        // A jump of 500 revs in 1 s is a spike: counted, value held (0).
        let spike = try d.decode(csc(crank: 511, ct: 1536), at: ms(4000))
        #expect(spike.has(.absurdValue) && spike.cadenceRpm == 0)
        // The next event after the spike is measured from it: 1 rev in 1 s = 60 rpm.
        #expect(approx(try d.decode(csc(crank: 512, ct: 2560), at: ms(5000)).cadenceRpm, 60))
    }

    @Test func longGapRebasesInsteadOfAliasing() throws {
        var d = SensorDecoder(profile: .bleSpeedCadence, wheelCircumferenceMm: 2000)
        _ = try d.decode(csc(wheel: 0, wt: 0), at: ms(0))
        // 70 s later the 16-bit 1/1024 s time has wrapped: the difference (0x400) would mean
        // 20 rev/s. The reading is taken as a new reference; distance still counts the revs.
        let v = try d.decode(csc(wheel: 20, wt: 0x400), at: ms(70_000))
        #expect(v.speedMps == nil || v.speedMps == 0)
        #expect(approx(v.distanceM, 40))
    }

    @Test func counterResetDuringLongGapAddsNoDistance() throws {
        var d = SensorDecoder(profile: .bleSpeedCadence, wheelCircumferenceMm: 2000)
        _ = try d.decode(csc(wheel: 1000, wt: 0), at: ms(0))
        // 70 s later the counter reads 5 (the battery was changed): (5 − 1000) mod 2^32 would be
        // ~4.3e9 revolutions. It is a spike: no distance, counted.
        let v = try d.decode(csc(wheel: 5, wt: 0x400), at: ms(70_000))
        #expect(v.has(.absurdValue))
        #expect(v.distanceM == 0)
        // Riding on from the new reference: 2 revs in 1 s.
        #expect(approx(try d.decode(csc(wheel: 7, wt: 0x800), at: ms(71_000)).distanceM, 4))
    }
}
