import RideModel

/// The radio a sensor frame came over (RideModel's `SensorTransport`, the frame's transport byte).
public typealias Transport = SensorTransport

/// A set of quantities as a bit mask (bit = `Quantity.rawValue`).
public struct QuantitySet: OptionSet, Sendable, Hashable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ qs: Quantity...) { self.init(qs) }
    public init(_ qs: [Quantity]) { rawValue = 0; for q in qs { insert(q) } }
    public func contains(_ q: Quantity) -> Bool { rawValue & (1 << UInt32(q.rawValue)) != 0 }
    public mutating func insert(_ q: Quantity) { rawValue |= 1 << UInt32(q.rawValue) }
    public mutating func remove(_ q: Quantity) { rawValue &= ~(1 << UInt32(q.rawValue)) }
    public static let all = QuantitySet(rawValue: (1 << UInt32(Quantity.countMax)) - 1)
}

/// The profiles with a decoder. A profile is named on the wire by the ANT+ device type or the
/// GATT characteristic's 16-bit UUID.
public enum Profile: UInt8, CaseIterable, Sendable, Hashable, CustomStringConvertible {
    case bleHeartRate = 0, bleSpeedCadence, bleCyclingPower, bleCyclingPowerFeature, bleBatteryLevel
    case antHeartRate, antBikePower, antSpeedCadence, antCadence, antSpeed
    /// Rear radars: Garmin Varia's BLE characteristic (wire code 0x3203), ANT+ Bike Radar (40).
    case bleRadar, antBikeRadar

    public init?(transport: Transport, code: UInt16) {
        switch (transport, code) {
        case (.ble, 0x2A37): self = .bleHeartRate
        case (.ble, 0x2A5B): self = .bleSpeedCadence
        case (.ble, 0x2A63): self = .bleCyclingPower
        case (.ble, 0x2A65): self = .bleCyclingPowerFeature
        case (.ble, 0x2A19): self = .bleBatteryLevel
        case (.ant, 120): self = .antHeartRate
        case (.ant, 11): self = .antBikePower
        case (.ant, 121): self = .antSpeedCadence
        case (.ant, 122): self = .antCadence
        case (.ant, 123): self = .antSpeed
        case (.ble, 0x3203): self = .bleRadar
        case (.ant, 40): self = .antBikeRadar
        default: return nil
        }
    }

    public var transport: Transport {
        switch self {
        case .bleHeartRate, .bleSpeedCadence, .bleCyclingPower, .bleCyclingPowerFeature, .bleBatteryLevel, .bleRadar: .ble
        case .antHeartRate, .antBikePower, .antSpeedCadence, .antCadence, .antSpeed, .antBikeRadar: .ant
        }
    }

    /// GATT characteristic UUID (BLE) or device type (ANT+).
    public var code: UInt16 {
        switch self {
        case .bleHeartRate: 0x2A37
        case .bleSpeedCadence: 0x2A5B
        case .bleCyclingPower: 0x2A63
        case .bleCyclingPowerFeature: 0x2A65
        case .bleBatteryLevel: 0x2A19
        case .antHeartRate: 120
        case .antBikePower: 11
        case .antSpeedCadence: 121
        case .antCadence: 122
        case .antSpeed: 123
        case .bleRadar: 0x3203
        case .antBikeRadar: 40
        }
    }

    /// The quantities this profile can provide.
    public var quantities: QuantitySet {
        switch self {
        case .bleHeartRate, .antHeartRate: QuantitySet(.heartRate, .rrInterval, .battery)
        case .bleSpeedCadence, .antSpeedCadence: QuantitySet(.speed, .distance, .cadence, .battery)
        case .bleCyclingPower:
            QuantitySet(.power, .cadence, .speed, .distance, .energy, .pedalBalanceRight, .battery)
        case .antBikePower:
            QuantitySet(.power, .cadence, .speed, .distance, .pedalBalanceRight, .torqueEffectivenessLeft,
                        .torqueEffectivenessRight, .pedalSmoothnessLeft, .pedalSmoothnessRight, .battery)
        case .bleCyclingPowerFeature: QuantitySet()
        case .bleBatteryLevel: QuantitySet(.battery)
        case .antCadence: QuantitySet(.cadence, .battery)
        case .antSpeed: QuantitySet(.speed, .distance, .battery)
        case .bleRadar: QuantitySet()
        case .antBikeRadar: QuantitySet(.battery)
        }
    }

    public var description: String {
        switch self {
        case .bleHeartRate: "ble_heart_rate_2a37"
        case .bleSpeedCadence: "ble_csc_2a5b"
        case .bleCyclingPower: "ble_cycling_power_2a63"
        case .bleCyclingPowerFeature: "ble_cycling_power_feature_2a65"
        case .bleBatteryLevel: "ble_battery_level_2a19"
        case .antHeartRate: "ant_heart_rate_120"
        case .antBikePower: "ant_bike_power_11"
        case .antSpeedCadence: "ant_speed_cadence_121"
        case .antCadence: "ant_cadence_122"
        case .antSpeed: "ant_speed_123"
        case .bleRadar: "ble_varia_radar_6a4e3203"
        case .antBikeRadar: "ant_bike_radar_40"
        }
    }
}

/// What a decoder derived from one payload: values in SI units (rpm, W, bpm, %), each nil when the
/// payload gave none. Fixed size.
public struct DerivedValues: Sendable {
    public var heartRateBpm: Double?
    /// New RR intervals, 1/1024 s, oldest first.
    public var rrIntervals1024 = InlineArray<32, UInt16>(repeating: 0)
    public var rrCount = 0
    /// The power to show and record: the event average on ANT+ (robust to lost messages), the
    /// instantaneous value (negative clamped to 0) on BLE.
    public var powerW: Double?
    /// Average power over the events since the previous page (ANT+ 0x10, torque pages).
    public var averagePowerW: Double?
    public var cadenceRpm: Double?
    public var speedMps: Double?
    /// Distance since this decoder's first reading, m.
    public var distanceM: Double?
    public var energyKJ: Double?
    public var torqueNm: Double?
    public var wheelRpm: Double?
    public var pedalBalanceRightPercent: Double?
    public var torqueEffectivenessLeftPercent: Double?
    public var torqueEffectivenessRightPercent: Double?
    public var pedalSmoothnessLeftPercent: Double?
    public var pedalSmoothnessRightPercent: Double?
    public var batteryPercent: Int?
    /// From an onboard GPS or the altimetry (docs/gps.md): degrees, m, m (cumulative), %.
    public var latitudeDeg: Double?
    public var longitudeDeg: Double?
    public var altitudeM: Double?
    public var ascentM: Double?
    public var descentM: Double?
    public var gradePercent: Double?
    /// A rear radar's frame: the vehicles behind (empty: a clear road); nil for any other payload
    /// (a radar's battery page, a first fragment).
    public var radar: RadarPicture?
    /// The radar said it is switching off (ANT+ status page): it is lost at once, never a clear road.
    public var radarShutdown = false
    /// Bad-input kinds met while decoding (bit = `BadInput.rawValue`) that did not stop it.
    public var warnings: UInt32 = 0

    public init() {}

    public mutating func warn(_ k: BadInput) { warnings |= 1 << UInt32(k.rawValue) }
    public func has(_ k: BadInput) -> Bool { warnings & (1 << UInt32(k.rawValue)) != 0 }

    public func rrIntervalS(_ i: Int) -> Double { Double(rrIntervals1024[i]) / 1024 }

    mutating func appendRR(_ v: UInt16) {
        let s = Double(v) / 1024
        guard s >= RateLimits.rrIntervalSMin && s <= RateLimits.rrIntervalSMax else { warn(.absurdValue); return }
        guard rrCount < 32 else { return }
        rrIntervals1024[rrCount] = v
        rrCount += 1
    }

    /// The value of `q` in this payload, if any (RR intervals are read with `rrIntervalS`).
    public func value(_ q: Quantity) -> Double? {
        switch q {
        case .heartRate: heartRateBpm
        case .power: powerW
        case .cadence: cadenceRpm
        case .speed: speedMps
        case .distance: distanceM
        case .energy: energyKJ
        case .pedalBalanceRight: pedalBalanceRightPercent
        case .torqueEffectivenessLeft: torqueEffectivenessLeftPercent
        case .torqueEffectivenessRight: torqueEffectivenessRightPercent
        case .pedalSmoothnessLeft: pedalSmoothnessLeftPercent
        case .pedalSmoothnessRight: pedalSmoothnessRightPercent
        case .battery: batteryPercent.map(Double.init)
        case .latitude: latitudeDeg
        case .longitude: longitudeDeg
        case .altitude: altitudeM
        case .ascent: ascentM
        case .descent: descentM
        case .grade: gradePercent
        default: nil
        }
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.double("heart_rate_bpm", heartRateBpm)
        if rrCount > 0 { v.doubles("rr_intervals_s", count: rrCount) { rrIntervalS($0) } }
        v.double("power_w", powerW)
        v.double("avg_power_w", averagePowerW)
        v.double("cadence_rpm", cadenceRpm)
        v.double("speed_mps", speedMps)
        v.double("distance_m", distanceM)
        v.double("energy_kj", energyKJ)
        v.double("torque_nm", torqueNm)
        v.double("wheel_rpm", wheelRpm)
        v.double("pedal_balance_right_percent", pedalBalanceRightPercent)
        v.double("torque_effectiveness_left_percent", torqueEffectivenessLeftPercent)
        v.double("torque_effectiveness_right_percent", torqueEffectivenessRightPercent)
        v.double("pedal_smoothness_left_percent", pedalSmoothnessLeftPercent)
        v.double("pedal_smoothness_right_percent", pedalSmoothnessRightPercent)
        v.int("battery_percent", batteryPercent)
        if let r = radar {
            v.records("targets", count: r.count) { i, w in
                let t = r[i]
                w.double("range_m", t.rangeM)
                w.optionalDouble("closing_speed_mps", t.closingSpeedMps)
                w.string("threat", t.threat.description)
                if let s = t.side { w.string("side", s.description) }
            }
        }
        if radarShutdown { v.bool("radar_shutdown", true) }
    }
}
