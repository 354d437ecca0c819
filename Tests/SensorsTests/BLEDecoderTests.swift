import TestSupport
import Testing
import RideModel
@testable import Sensors

@Suite struct BLEDecoderTests {
    @Test func heartRateU8WithContactEnergyAndRR() throws {
        // flags 0x1E: u8 HR, contact detected (3<<1), energy, RR. HR 72, energy 0x0102 kJ,
        // RR 1024 (1.0 s) and 0x0333 (819/1024 s).
        let m = try HeartRateMeasurement.parse(hexPayload("1e 48 02 01 00 04 33 03"))
        #expect(m.heartRateBpm == 72)
        #expect(!m.heartRateIs16Bit)
        #expect(m.contact == .detected)
        #expect(m.energyExpendedKJ == 0x0102)
        #expect(m.rrCount == 2)
        #expect(m.rrIntervalS(0) == 1.0)
        #expect(m.rrIntervalS(1) == 819.0 / 1024)
        #expect(!m.reservedFlags && !m.trailingByte)
    }

    @Test func heartRateU16AndContactStates() throws {
        let m = try HeartRateMeasurement.parse(hexPayload("05 2c 01"))
        #expect(m.heartRateBpm == 300 && m.heartRateIs16Bit)
        #expect(m.contact == .notDetected)
        #expect(try HeartRateMeasurement.parse(hexPayload("00 50")).contact == .notSupported)
        #expect(try HeartRateMeasurement.parse(hexPayload("02 50")).contact == .notSupported)
        #expect(try HeartRateMeasurement.parse(hexPayload("e0 50")).reservedFlags)
        #expect(try HeartRateMeasurement.parse(hexPayload("10 50 00 04 01")).trailingByte)
    }

    @Test func heartRateTruncated() {
        for hex in ["", "01 50", "08 50 01", "09 50 00 01"] {
            #expect(throws: DecodeError.self) { try HeartRateMeasurement.parse(hexPayload(hex)) }
        }
    }

    @Test func cscBothFields() throws {
        // wheel 0x00012345 revs at 0x0400; crank 0x0102 at 0x0800.
        let m = try CSCMeasurement.parse(hexPayload("03 45 23 01 00 00 04 02 01 00 08"))
        #expect(m.wheelRevolutions == 0x12345)
        #expect(m.wheelEventTime1024 == 0x400)
        #expect(m.crankRevolutions == 0x102)
        #expect(m.crankEventTime1024 == 0x800)
        let crankOnly = try CSCMeasurement.parse(hexPayload("02 02 01 00 08"))
        #expect(crankOnly.wheelRevolutions == nil && crankOnly.crankRevolutions == 0x102)
        #expect(throws: DecodeError.self) { try CSCMeasurement.parse(hexPayload("01 45 23 01 00 00")) }
        #expect(try CSCMeasurement.parse(hexPayload("04")).reservedFlags)
    }

    @Test func cyclingPowerHandVector() throws {
        // flags 0x0B3F? build: bits 0,1,2,3,4,5 + 8 + 11 = 0x093F; power -5 W.
        let hex = "3f 09 fb ff  50  40 06  10 27 00 00 00 10  e8 03 00 20  bc 3a 12  2c 01"
        let m = try CyclingPowerMeasurement.parse(hexPayload(hex))
        #expect(m.instantaneousPowerW == -5)
        #expect(m.pedalPowerBalanceHalfPercent == 0x50 && m.balanceReferenceLeft)
        #expect(m.rightBalancePercent == 60)
        #expect(m.accumulatedTorque32 == 0x0640 && m.torqueSourceCrank)
        #expect(m.wheelRevolutions == 10000 && m.wheelEventTime2048 == 0x1000)
        #expect(m.crankRevolutions == 1000 && m.crankEventTime1024 == 0x2000)
        #expect(m.maximumAngleDeg == 0xABC && m.minimumAngleDeg == 0x123)
        #expect(m.accumulatedEnergyKJ == 300)
        #expect(m.maximumForceN == nil && m.topDeadSpotAngleDeg == nil)
        #expect(m.trailingBytes == 0)
    }

    /// Every combination of the 13 defined flag bits: fields land where the table says, with the
    /// values written, and one byte less is a truncation.
    @Test func cyclingPowerEveryFlagCombination() throws {
        var rng = SeededGenerator(seed: 0xC0FFEE)
        for flags in UInt16(0)..<(1 << 13) {
            let power = Int16(truncatingIfNeeded: rng.next())
            let bal = UInt8.random(in: 0...255, using: &rng)
            let torque = UInt16.random(in: 0...UInt16.max, using: &rng)
            let wheel = UInt32.random(in: 0...UInt32.max, using: &rng)
            let wheelT = UInt16.random(in: 0...UInt16.max, using: &rng)
            let crank = UInt16.random(in: 0...UInt16.max, using: &rng)
            let crankT = UInt16.random(in: 0...UInt16.max, using: &rng)
            let fMax = Int16(truncatingIfNeeded: rng.next()), fMin = Int16(truncatingIfNeeded: rng.next())
            let tMax = Int16(truncatingIfNeeded: rng.next()), tMin = Int16(truncatingIfNeeded: rng.next())
            let aMax = UInt16.random(in: 0...0xFFF, using: &rng), aMin = UInt16.random(in: 0...0xFFF, using: &rng)
            let tds = UInt16.random(in: 0...360, using: &rng), bds = UInt16.random(in: 0...360, using: &rng)
            let energy = UInt16.random(in: 0...UInt16.max, using: &rng)
            var w = LE()
            w.u16(flags); w.s16(power)
            if flags & 0x1 != 0 { w.u8(bal) }
            if flags & 0x4 != 0 { w.u16(torque) }
            if flags & 0x10 != 0 { w.u32(wheel); w.u16(wheelT) }
            if flags & 0x20 != 0 { w.u16(crank); w.u16(crankT) }
            if flags & 0x40 != 0 { w.s16(fMax); w.s16(fMin) }
            if flags & 0x80 != 0 { w.s16(tMax); w.s16(tMin) }
            if flags & 0x100 != 0 { w.u24(UInt32(aMin) << 12 | UInt32(aMax)) }
            if flags & 0x200 != 0 { w.u16(tds) }
            if flags & 0x400 != 0 { w.u16(bds) }
            if flags & 0x800 != 0 { w.u16(energy) }
            #expect(CyclingPowerMeasurement.length(flags: flags) == w.bytes.count)
            let m = try CyclingPowerMeasurement.parse(payload(w.bytes))
            #expect(m.instantaneousPowerW == power)
            #expect(m.pedalPowerBalanceHalfPercent == (flags & 0x1 != 0 ? bal : nil))
            #expect(m.balanceReferenceLeft == (flags & 0x2 != 0))
            #expect(m.accumulatedTorque32 == (flags & 0x4 != 0 ? torque : nil))
            #expect(m.torqueSourceCrank == (flags & 0x8 != 0))
            #expect(m.wheelRevolutions == (flags & 0x10 != 0 ? wheel : nil))
            #expect(m.wheelEventTime2048 == (flags & 0x10 != 0 ? wheelT : nil))
            #expect(m.crankRevolutions == (flags & 0x20 != 0 ? crank : nil))
            #expect(m.crankEventTime1024 == (flags & 0x20 != 0 ? crankT : nil))
            #expect(m.maximumForceN == (flags & 0x40 != 0 ? fMax : nil))
            #expect(m.minimumForceN == (flags & 0x40 != 0 ? fMin : nil))
            #expect(m.maximumTorque32 == (flags & 0x80 != 0 ? tMax : nil))
            #expect(m.minimumTorque32 == (flags & 0x80 != 0 ? tMin : nil))
            #expect(m.maximumAngleDeg == (flags & 0x100 != 0 ? aMax : nil))
            #expect(m.minimumAngleDeg == (flags & 0x100 != 0 ? aMin : nil))
            #expect(m.topDeadSpotAngleDeg == (flags & 0x200 != 0 ? tds : nil))
            #expect(m.bottomDeadSpotAngleDeg == (flags & 0x400 != 0 ? bds : nil))
            #expect(m.accumulatedEnergyKJ == (flags & 0x800 != 0 ? energy : nil))
            #expect(m.offsetCompensationIndicator == (flags & 0x1000 != 0))
            #expect(!m.reservedFlags && m.trailingBytes == 0)
            #expect(throws: DecodeError.self) { try CyclingPowerMeasurement.parse(payload(Array(w.bytes.dropLast()))) }
        }
    }

    @Test func cyclingPowerFeatureAndBattery() throws {
        let f = try CyclingPowerFeature.parse(hexPayload("0c 00 21 00"))  // bits 2,3,16,21
        #expect(f.supports(bit: 2) && f.supports(bit: 3) && !f.supports(bit: 0))
        #expect(f.supports(bit: 16))
        #expect(f.distributedSystemSupport == 2)
        #expect(throws: DecodeError.self) { try CyclingPowerFeature.parse(hexPayload("0c 00 21")) }
        #expect(try BatteryLevel.parse(hexPayload("5a")).percent == 90)
        #expect(throws: DecodeError.self) { try BatteryLevel.parse(hexPayload("65")) }
    }

    @Test func bleHeartRateDecoderDropsNoContactAndBadRR() throws {
        var d = SensorDecoder(profile: .bleHeartRate)
        let v = try d.decode(hexPayload("16 48 00 04 10 00"), at: ms(0)) // RR 1.0 s and 16/1024 s (too short)
        #expect(v.heartRateBpm == 72)
        #expect(v.rrCount == 1 && v.rrIntervalS(0) == 1.0)
        #expect(v.has(.absurdValue))
        let noContact = try d.decode(hexPayload("04 48"), at: ms(1000))
        #expect(noContact.heartRateBpm == nil)
    }

    @Test func cyclingPowerDecoderRates() throws {
        var d = SensorDecoder(profile: .bleCyclingPower, wheelCircumferenceMm: 2000)
        // flags 0x30: wheel + crank. Power 250 W.
        func cps(_ p: Int16, _ wheel: UInt32, _ wt: UInt16, _ crank: UInt16, _ ct: UInt16) -> Payload {
            var w = LE(); w.u16(0x30); w.s16(p); w.u32(wheel); w.u16(wt); w.u16(crank); w.u16(ct); return payload(w.bytes)
        }
        _ = try d.decode(cps(250, 100, 0, 10, 0), at: ms(0))
        // 2 wheel revs in 1 s (2048 ticks): 2 rev/s × 2 m = 4 m/s; 1.5 crank revs? 1 rev in 0.5 s = 120 rpm.
        let v = try d.decode(cps(-7, 102, 2048, 11, 512), at: ms(1000))
        #expect(v.powerW == 0)
        #expect(approx(v.speedMps, 4))
        #expect(approx(v.cadenceRpm, 120))
        #expect(approx(v.distanceM, 4))
    }
}
