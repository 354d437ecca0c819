// Stateless parsers of the BLE GATT characteristic values (wire-formats.md §1). Each returns a
// value type with every field, or throws a `DecodeError`; none allocates.

/// Heart Rate Measurement 0x2A37 sensor contact (flags bits 1–2).
public enum SensorContact: UInt8, Sendable, Hashable, CustomStringConvertible {
    case notSupported = 0, notDetected = 2, detected = 3
    public var description: String {
        switch self {
        case .notSupported: "not_supported"
        case .notDetected: "not_detected"
        case .detected: "detected"
        }
    }
}

/// Heart Rate Measurement 0x2A37.
public struct HeartRateMeasurement: Sendable {
    /// RR intervals one value can carry within `Payload.bytesMax`.
    public static let rrIntervalsMax = 32

    public var heartRateBpm: UInt16
    public var heartRateIs16Bit: Bool
    public var contact: SensorContact
    public var energyExpendedKJ: UInt16?
    /// RR intervals in 1/1024 s, oldest first; `rrCount` are valid.
    public var rrIntervals1024 = InlineArray<32, UInt16>(repeating: 0)
    public var rrCount = 0
    public var reservedFlags: Bool
    /// A single byte left after the RR intervals.
    public var trailingByte: Bool

    public static func parse(_ p: Payload) throws(DecodeError) -> HeartRateMeasurement {
        var r = PayloadReader(p)
        guard let flags = r.u8() else { throw DecodeError(.truncated, need: 2, have: p.count) }
        let wide = flags & 1 != 0
        let need = 1 + (wide ? 2 : 1) + (flags & 8 != 0 ? 2 : 0)
        guard p.count >= need else { throw DecodeError(.truncated, need: need, have: p.count) }
        let hr = wide ? r.u16()! : UInt16(r.u8()!)
        let contactBits = (flags >> 1) & 3
        var m = HeartRateMeasurement(
            heartRateBpm: hr, heartRateIs16Bit: wide,
            contact: contactBits == 3 ? .detected : contactBits == 2 ? .notDetected : .notSupported,
            energyExpendedKJ: flags & 8 != 0 ? r.u16()! : nil,
            reservedFlags: flags & 0xE0 != 0, trailingByte: false)
        if flags & 0x10 != 0 {
            while r.remaining >= 2, m.rrCount < rrIntervalsMax {
                m.rrIntervals1024[m.rrCount] = r.u16()!
                m.rrCount += 1
            }
            m.trailingByte = r.remaining > 0
        } else {
            m.trailingByte = r.remaining > 0
        }
        return m
    }

    public func rrIntervalS(_ i: Int) -> Double { Double(rrIntervals1024[i]) / 1024 }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.int("heart_rate_bpm", Int64(heartRateBpm))
        v.string("sensor_contact", contact.description)
        v.int("energy_expended_kj", energyExpendedKJ)
        if rrCount > 0 { v.doubles("rr_intervals_s", count: rrCount) { rrIntervalS($0) } }
        if reservedFlags { v.bool("reserved_flags", true) }
    }
}

/// CSC Measurement 0x2A5B.
public struct CSCMeasurement: Sendable, Hashable {
    public var wheelRevolutions: UInt32?
    /// Last wheel event time, 1/1024 s.
    public var wheelEventTime1024: UInt16?
    public var crankRevolutions: UInt16?
    /// Last crank event time, 1/1024 s.
    public var crankEventTime1024: UInt16?
    public var reservedFlags: Bool
    public var trailingBytes: Int

    public static func parse(_ p: Payload) throws(DecodeError) -> CSCMeasurement {
        var r = PayloadReader(p)
        guard let flags = r.u8() else { throw DecodeError(.truncated, need: 1, have: 0) }
        let need = 1 + (flags & 1 != 0 ? 6 : 0) + (flags & 2 != 0 ? 4 : 0)
        guard p.count >= need else { throw DecodeError(.truncated, need: need, have: p.count) }
        var m = CSCMeasurement(reservedFlags: flags & 0xFC != 0, trailingBytes: 0)
        if flags & 1 != 0 { m.wheelRevolutions = r.u32()!; m.wheelEventTime1024 = r.u16()! }
        if flags & 2 != 0 { m.crankRevolutions = r.u16()!; m.crankEventTime1024 = r.u16()! }
        m.trailingBytes = r.remaining
        return m
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.int("cumulative_wheel_revolutions", wheelRevolutions)
        if let t = wheelEventTime1024 { v.double("last_wheel_event_time_s", Double(t) / 1024) }
        v.int("cumulative_crank_revolutions", crankRevolutions)
        if let t = crankEventTime1024 { v.double("last_crank_event_time_s", Double(t) / 1024) }
        if reservedFlags { v.bool("reserved_flags", true) }
    }
}

/// Cycling Power Measurement 0x2A63, every optional field.
public struct CyclingPowerMeasurement: Sendable, Hashable {
    public var flags: UInt16
    public var instantaneousPowerW: Int16
    /// Pedal power balance in 1/2 %.
    public var pedalPowerBalanceHalfPercent: UInt8?
    /// Flag bit 1: the balance refers to the left pedal (otherwise the reference is unknown).
    public var balanceReferenceLeft: Bool
    /// Accumulated torque, 1/32 Nm.
    public var accumulatedTorque32: UInt16?
    /// Flag bit 3: torque source is the crank (otherwise the wheel).
    public var torqueSourceCrank: Bool
    public var wheelRevolutions: UInt32?
    /// Last wheel event time, 1/2048 s.
    public var wheelEventTime2048: UInt16?
    public var crankRevolutions: UInt16?
    /// Last crank event time, 1/1024 s.
    public var crankEventTime1024: UInt16?
    public var maximumForceN: Int16?
    public var minimumForceN: Int16?
    /// 1/32 Nm.
    public var maximumTorque32: Int16?
    public var minimumTorque32: Int16?
    public var maximumAngleDeg: UInt16?
    public var minimumAngleDeg: UInt16?
    public var topDeadSpotAngleDeg: UInt16?
    public var bottomDeadSpotAngleDeg: UInt16?
    public var accumulatedEnergyKJ: UInt16?
    public var offsetCompensationIndicator: Bool { flags & 0x1000 != 0 }
    public var reservedFlags: Bool { flags & 0xE000 != 0 }
    public var trailingBytes: Int

    /// Field sizes in flag-bit order (bit 1, 3 and 12 are flags without a field).
    static let fieldBytes: [Int] = [1, 0, 2, 0, 6, 4, 4, 4, 3, 2, 2, 2, 0]

    /// Bytes a value with these flags must have.
    public static func length(flags: UInt16) -> Int {
        var n = 4
        for bit in 0..<13 where flags & (1 << bit) != 0 { n += fieldBytes[bit] }
        return n
    }

    public static func parse(_ p: Payload) throws(DecodeError) -> CyclingPowerMeasurement {
        var r = PayloadReader(p)
        guard let flags = r.u16(), let power = r.s16() else { throw DecodeError(.truncated, need: 4, have: p.count) }
        let need = length(flags: flags)
        guard p.count >= need else { throw DecodeError(.truncated, need: need, have: p.count) }
        var m = CyclingPowerMeasurement(flags: flags, instantaneousPowerW: power, balanceReferenceLeft: flags & 2 != 0,
                                        torqueSourceCrank: flags & 8 != 0, trailingBytes: 0)
        if flags & 0x01 != 0 { m.pedalPowerBalanceHalfPercent = r.u8()! }
        if flags & 0x04 != 0 { m.accumulatedTorque32 = r.u16()! }
        if flags & 0x10 != 0 { m.wheelRevolutions = r.u32()!; m.wheelEventTime2048 = r.u16()! }
        if flags & 0x20 != 0 { m.crankRevolutions = r.u16()!; m.crankEventTime1024 = r.u16()! }
        if flags & 0x40 != 0 { m.maximumForceN = r.s16()!; m.minimumForceN = r.s16()! }
        if flags & 0x80 != 0 { m.maximumTorque32 = r.s16()!; m.minimumTorque32 = r.s16()! }
        if flags & 0x100 != 0 {
            let angles = r.u24()!
            m.maximumAngleDeg = UInt16(angles & 0xFFF)
            m.minimumAngleDeg = UInt16(angles >> 12)
        }
        if flags & 0x200 != 0 { m.topDeadSpotAngleDeg = r.u16()! }
        if flags & 0x400 != 0 { m.bottomDeadSpotAngleDeg = r.u16()! }
        if flags & 0x800 != 0 { m.accumulatedEnergyKJ = r.u16()! }
        m.trailingBytes = r.remaining
        return m
    }

    /// Percent of power from the right pedal, when the balance refers to the left pedal.
    public var rightBalancePercent: Double? {
        guard let b = pedalPowerBalanceHalfPercent, balanceReferenceLeft, b <= 200 else { return nil }
        return 100 - Double(b) / 2
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.int("flags", Int64(flags))
        v.int("instantaneous_power_w", Int64(instantaneousPowerW))
        if let b = pedalPowerBalanceHalfPercent {
            v.double("pedal_power_balance_percent", Double(b) / 2)
            v.string("pedal_power_balance_reference", balanceReferenceLeft ? "left" : "unknown")
        }
        if let t = accumulatedTorque32 {
            v.double("accumulated_torque_nm", Double(t) / 32)
            v.string("accumulated_torque_source", torqueSourceCrank ? "crank" : "wheel")
        }
        v.int("cumulative_wheel_revolutions", wheelRevolutions)
        if let t = wheelEventTime2048 { v.double("last_wheel_event_time_s", Double(t) / 2048) }
        v.int("cumulative_crank_revolutions", crankRevolutions)
        if let t = crankEventTime1024 { v.double("last_crank_event_time_s", Double(t) / 1024) }
        v.int("maximum_force_n", maximumForceN)
        v.int("minimum_force_n", minimumForceN)
        if let t = maximumTorque32 { v.double("maximum_torque_nm", Double(t) / 32) }
        if let t = minimumTorque32 { v.double("minimum_torque_nm", Double(t) / 32) }
        v.int("maximum_angle_deg", maximumAngleDeg)
        v.int("minimum_angle_deg", minimumAngleDeg)
        v.int("top_dead_spot_angle_deg", topDeadSpotAngleDeg)
        v.int("bottom_dead_spot_angle_deg", bottomDeadSpotAngleDeg)
        v.int("accumulated_energy_kj", accumulatedEnergyKJ)
        v.bool("offset_compensation_indicator", offsetCompensationIndicator)
        if reservedFlags { v.bool("reserved_flags", true) }
    }
}

/// Cycling Power Feature 0x2A65.
public struct CyclingPowerFeature: Sendable, Hashable {
    public var rawValue: UInt32

    public static let names: [String] = [
        "pedal_power_balance", "accumulated_torque", "wheel_revolution_data", "crank_revolution_data",
        "extreme_magnitudes", "extreme_angles", "top_and_bottom_dead_spot_angles", "accumulated_energy",
        "offset_compensation_indicator", "offset_compensation", "cycling_power_measurement_content_masking",
        "multiple_sensor_locations", "crank_length_adjustment", "chain_length_adjustment",
        "chain_weight_adjustment", "span_length_adjustment", "sensor_measurement_context_torque",
        "instantaneous_measurement_direction", "factory_calibration_date", "enhanced_offset_compensation",
    ]

    public static func parse(_ p: Payload) throws(DecodeError) -> CyclingPowerFeature {
        guard p.count >= 4 else { throw DecodeError(.truncated, need: 4, have: p.count) }
        return CyclingPowerFeature(rawValue: p.u32(at: 0))
    }

    public func supports(bit: Int) -> Bool { rawValue & (1 << UInt32(bit)) != 0 }
    /// Bits 20–21: 0 unspecified (legacy), 1 not for distributed use, 2 can be used, 3 reserved.
    public var distributedSystemSupport: UInt8 { UInt8((rawValue >> 20) & 3) }
    public var reservedBits: Bool { rawValue & 0xFFC0_0000 != 0 }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.int("feature_bits", Int64(rawValue))
        for (i, n) in Self.names.enumerated() { v.bool(n, supports(bit: i)) }
        v.int("distributed_system_support", Int64(distributedSystemSupport))
    }
}

/// Battery Level 0x2A19.
public struct BatteryLevel: Sendable, Hashable {
    public var percent: UInt8

    public static func parse(_ p: Payload) throws(DecodeError) -> BatteryLevel {
        guard p.count >= 1 else { throw DecodeError(.truncated, need: 1, have: 0) }
        guard p[0] <= 100 else { throw DecodeError(.absurdValue) }
        return BatteryLevel(percent: p[0])
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) { v.int("battery_level_percent", Int64(percent)) }
}
