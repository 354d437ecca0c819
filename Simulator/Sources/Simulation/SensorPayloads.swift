/// Encodes the synthetic ride's state as the raw payloads real sensors send (the bytes a bridge
/// forwards), so the simulator drives the device's decoders end to end. Layouts per
/// ../shared/spec/wire-formats.md. Pure; every counter wraps at its field width like a sensor's.
public enum SensorPayloads {
    /// Payloads are at most this long (BLE HRM with two RR intervals).
    public static let payloadBytesMax = 20

    @inline(__always) static func le16(_ v: UInt64, into out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    @inline(__always) static func le32(_ v: UInt64, into out: inout [UInt8]) {
        le16(v, into: &out)
        le16(v >> 16, into: &out)
    }

    /// 1/1024 s event time of an instant in ms (wraps at 16 bits, as sensors do).
    @inline(__always) static func ticks1024(_ ms: Int64) -> UInt64 { UInt64(truncatingIfNeeded: ms * 1024 / 1000) }

    // MARK: BLE

    /// Heart Rate Measurement 0x2A37: u8 heart rate, sensor contact detected, RR present when a
    /// beat happened since the last notification.
    public static func bleHeartRate(_ ride: SyntheticRide, lastSentBeatMs: Int64, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        let hasRR = ride.lastBeatMs > lastSentBeatMs && ride.previousBeatMs > 0
        out.append(0b0000_0110 | (hasRR ? 0b0001_0000 : 0)) // contact supported + detected
        out.append(UInt8(max(0, min(255, ride.heartRateBpm.rounded()))))
        if hasRR {
            let rrMs = ride.lastBeatMs - ride.previousBeatMs
            le16(UInt64(rrMs * 1024 / 1000), into: &out)
        }
    }

    /// Cycling Power Measurement 0x2A63: power, pedal balance (left reference), crank
    /// revolution data.
    public static func blePower(_ ride: SyntheticRide, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        let flags: UInt64 = 0b0000_0000_0010_0011 // balance present, left reference; crank data
        le16(flags, into: &out)
        let w = Int16(max(-32768, min(32767, ride.powerW.rounded())))
        le16(UInt64(UInt16(bitPattern: w)), into: &out)
        out.append(ride.powerW > 0 ? 100 : 0) // 50 % left, in 1/2 %
        le16(UInt64(ride.crankRevolutions.rounded(.down)), into: &out)
        le16(ticks1024(ride.lastCrankEventMs), into: &out)
    }

    /// CSC Measurement 0x2A5B with wheel data (u32 revolutions, 1/1024 s event time).
    public static func bleSpeed(_ ride: SyntheticRide, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(0b01)
        le32(UInt64(ride.wheelRevolutions.rounded(.down)), into: &out)
        le16(ticks1024(ride.lastWheelEventMs), into: &out)
    }

    /// CSC Measurement 0x2A5B with crank data only.
    public static func bleCadence(_ ride: SyntheticRide, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(0b10)
        le16(UInt64(ride.crankRevolutions.rounded(.down)), into: &out)
        le16(ticks1024(ride.lastCrankEventMs), into: &out)
    }

    // MARK: ANT+

    /// HRM data page 4 (previous beat time for RR), toggle bit flipped every 4 messages.
    public static func antHeartRate(_ ride: SyntheticRide, messageCount: Int, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        let toggle: UInt8 = (messageCount / 4) % 2 == 1 ? 0x80 : 0
        out.append(0x04 | toggle)
        out.append(0xFF) // manufacturer specific
        le16(ticks1024(ride.previousBeatMs), into: &out)
        le16(ticks1024(ride.lastBeatMs), into: &out)
        out.append(UInt8(truncatingIfNeeded: Int64(ride.beats.rounded(.down))))
        out.append(UInt8(max(0, min(255, ride.heartRateBpm.rounded()))))
    }

    /// Bike power page 0x10 (power only): event count, pedal balance n/a, cadence, accumulated
    /// and instantaneous power. `eventCount` is the sensor's own counter (one per update).
    public static func antPower(_ ride: SyntheticRide, eventCount: Int, accumulatedPowerW: Int, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(0x10)
        out.append(UInt8(truncatingIfNeeded: eventCount))
        out.append(0xFF)
        out.append(UInt8(max(0, min(254, ride.cadenceRpm.rounded()))))
        le16(UInt64(truncatingIfNeeded: accumulatedPowerW), into: &out)
        le16(UInt64(max(0, min(65_535, ride.powerW.rounded()))), into: &out)
    }

    /// Bike speed and cadence 0x79 (no page byte).
    public static func antSpeedCadence(_ ride: SyntheticRide, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        le16(ticks1024(ride.lastCrankEventMs), into: &out)
        le16(UInt64(ride.crankRevolutions.rounded(.down)), into: &out)
        le16(ticks1024(ride.lastWheelEventMs), into: &out)
        le16(UInt64(ride.wheelRevolutions.rounded(.down)), into: &out)
    }

    /// Speed-only 0x7B or cadence-only 0x7A page 0: event time and cumulative revolutions.
    public static func antRevolutions(eventMs: Int64, revolutions: Double, messageCount: Int, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        let toggle: UInt8 = (messageCount / 4) % 2 == 1 ? 0x80 : 0
        out.append(0x00 | toggle)
        out.append(0xFF); out.append(0xFF); out.append(0xFF)
        le16(ticks1024(eventMs), into: &out)
        le16(UInt64(revolutions.rounded(.down)), into: &out)
    }
}
