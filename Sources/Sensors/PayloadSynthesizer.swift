import RideModel

/// Makes the payloads a real sensor would send for given values: cumulative revolution counters
/// with event times at the last whole revolution, wrapping at their widths. For the simulator
/// (synthetic sensors go through the same decoders as real ones) and for round-trip tests.
public struct PayloadSynthesizer: Sendable {
    /// A cumulative event counter driven by a rate.
    struct Revolutions: Sendable {
        /// Revolutions done, fractional.
        var phase: Double = 0
        /// Whole revolutions counted.
        var count: UInt64 = 0
        /// Time of the last whole revolution, seconds since start.
        var lastEventS: Double = 0

        mutating func advance(revolutionsPerS rate: Double, from t0: Double, to t1: Double) {
            guard rate > 0, t1 > t0 else { return }
            let next = phase + rate * (t1 - t0)
            let whole = UInt64(next.rounded(.down)) - UInt64(phase.rounded(.down))
            if whole > 0 {
                count &+= whole
                // The last integer crossing, interpolated.
                lastEventS = t0 + (next.rounded(.down) - phase) / rate
            }
            phase = next
        }
    }

    public let wheelCircumferenceM: Double
    var lastS: Double?
    var crank = Revolutions()
    var wheel = Revolutions()
    var beats = Revolutions()
    var powerEvents: UInt8 = 0
    var accumulatedPowerW: UInt16 = 0
    var pageCounter = 0

    /// `counterStart` presets the revolution counters (e.g. just below a wrap).
    public init(wheelCircumferenceMm: Int = SensorDecoder.defaultWheelCircumferenceMm, counterStart: UInt64 = 0) {
        wheelCircumferenceM = Double(wheelCircumferenceMm) / 1000
        crank.count = counterStart
        wheel.count = counterStart
    }

    /// Moves the counters to `now` at the given rates.
    public mutating func advance(to now: MonotonicInstant, cadenceRpm: Double, speedMps: Double, heartRateBpm: Double) {
        let t = Double(now.milliseconds) / 1000
        if let t0 = lastS {
            crank.advance(revolutionsPerS: cadenceRpm / 60, from: t0, to: t)
            wheel.advance(revolutionsPerS: speedMps / wheelCircumferenceM, from: t0, to: t)
            beats.advance(revolutionsPerS: heartRateBpm / 60, from: t0, to: t)
        }
        lastS = t
    }

    static func ticks(_ s: Double, _ perS: Double) -> UInt16 { UInt16(truncatingIfNeeded: Int64((s * perS).rounded(.down))) }

    /// BLE Cycling Power Measurement with wheel and crank data (flags 0x30).
    public func cyclingPower(powerW: Int) -> Payload {
        var p = Payload()
        func le16(_ v: UInt16) { p.append(UInt8(v & 0xFF)); p.append(UInt8(v >> 8)) }
        le16(0x30)
        le16(UInt16(bitPattern: Int16(clamping: powerW)))
        let w = UInt32(truncatingIfNeeded: wheel.count)
        le16(UInt16(w & 0xFFFF)); le16(UInt16(w >> 16))
        le16(Self.ticks(wheel.lastEventS, 2048))
        le16(UInt16(truncatingIfNeeded: crank.count))
        le16(Self.ticks(crank.lastEventS, 1024))
        return p
    }

    /// BLE CSC Measurement with wheel and crank data.
    public func cscMeasurement() -> Payload {
        var p = Payload()
        func le16(_ v: UInt16) { p.append(UInt8(v & 0xFF)); p.append(UInt8(v >> 8)) }
        p.append(3)
        let w = UInt32(truncatingIfNeeded: wheel.count)
        le16(UInt16(w & 0xFFFF)); le16(UInt16(w >> 16))
        le16(Self.ticks(wheel.lastEventS, 1024))
        le16(UInt16(truncatingIfNeeded: crank.count))
        le16(Self.ticks(crank.lastEventS, 1024))
        return p
    }

    /// BLE Heart Rate Measurement (u8, contact detected).
    public func heartRateMeasurement(bpm: Int) -> Payload {
        Payload([0x06, UInt8(clamping: bpm)])!
    }

    /// ANT+ speed & cadence (device type 121).
    public func antSpeedCadence() -> Payload {
        let ct = Self.ticks(crank.lastEventS, 1024), cr = UInt16(truncatingIfNeeded: crank.count)
        let wt = Self.ticks(wheel.lastEventS, 1024), wr = UInt16(truncatingIfNeeded: wheel.count)
        return Payload([UInt8(ct & 0xFF), UInt8(ct >> 8), UInt8(cr & 0xFF), UInt8(cr >> 8),
                        UInt8(wt & 0xFF), UInt8(wt >> 8), UInt8(wr & 0xFF), UInt8(wr >> 8)])!
    }

    /// ANT+ heart-rate page 0 or 4 (alternating every 4 messages, toggle bit flipping).
    public mutating func antHeartRate(bpm: Int) -> Payload {
        pageCounter += 1
        let toggle: UInt8 = (pageCounter / 4) % 2 == 0 ? 0 : 0x80
        let t = Self.ticks(beats.lastEventS, 1024)
        return Payload([toggle, 0xFF, 0xFF, 0xFF, UInt8(t & 0xFF), UInt8(t >> 8), UInt8(truncatingIfNeeded: beats.count), UInt8(clamping: bpm)])!
    }

    /// ANT+ power-only page 0x10: one power event per call.
    public mutating func antPowerOnly(powerW: Int, cadenceRpm: Int) -> Payload {
        powerEvents &+= 1
        accumulatedPowerW &+= UInt16(clamping: max(0, powerW))
        let inst = UInt16(clamping: max(0, powerW))
        return Payload([0x10, powerEvents, 0xFF, UInt8(clamping: cadenceRpm), UInt8(accumulatedPowerW & 0xFF),
                        UInt8(accumulatedPowerW >> 8), UInt8(inst & 0xFF), UInt8(inst >> 8)])!
    }
}
