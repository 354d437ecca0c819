// Stateless parsers of ANT+ broadcast data pages (wire-formats.md §2). Every page is 8 bytes.

/// The length of every ANT+ broadcast data payload.
public let antPageBytes = 8

@inline(__always)
func requireANTPage(_ p: Payload) throws(DecodeError) {
    guard p.count == antPageBytes else {
        throw DecodeError(p.count < antPageBytes ? .truncated : .wrongLength, need: antPageBytes, have: p.count)
    }
}

/// ANT+ battery status (common page 0x52, HRM page 7, speed/cadence page 4), bits 4–6.
public enum ANTBatteryStatus: UInt8, Sendable, Hashable, CustomStringConvertible {
    case reserved = 0, new = 1, good = 2, ok = 3, low = 4, critical = 5, charging = 6, invalid = 7

    /// A rough charge for displays that show a percentage (the profile reports only a level).
    public var approximatePercent: Int? {
        switch self {
        case .new: 100
        case .good: 75
        case .ok: 50
        case .low: 20
        case .critical: 5
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .new: "new"
        case .good: "good"
        case .ok: "ok"
        case .low: "low"
        case .critical: "critical"
        case .charging: "charging"
        case .invalid: "invalid"
        case .reserved: "reserved"
        }
    }
}

/// Battery voltage and status from a descriptive byte (bits 0–3 coarse volts, bits 4–6 status)
/// and a fractional byte (1/256 V).
public struct ANTBattery: Sendable, Hashable {
    public var status: ANTBatteryStatus
    /// nil when the coarse voltage is 0xF (invalid).
    public var voltageV: Double?
    public var percent: UInt8?

    init(fractional: UInt8, descriptive: UInt8, percent: UInt8? = nil) {
        status = ANTBatteryStatus(rawValue: (descriptive >> 4) & 7)!
        let coarse = descriptive & 0x0F
        voltageV = coarse == 0x0F ? nil : Double(coarse) + Double(fractional) / 256
        self.percent = percent
    }

    func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.int("battery_percent", percent)
        v.double("battery_voltage_v", voltageV)
        v.string("battery_status", status.description)
    }
}

/// An ANT+ heart-rate monitor page (device type 120).
public struct ANTHeartRatePage: Sendable, Hashable {
    /// Page number (byte 0 bits 0–6).
    public var page: UInt8
    public var toggle: Bool
    /// Heart beat event time, 1/1024 s.
    public var eventTime1024: UInt16
    public var beatCount: UInt8
    public var heartRateBpm: UInt8
    /// Page 1: cumulative operating time, s.
    public var operatingTimeS: UInt32?
    /// Page 2.
    public var manufacturerID: UInt8?
    public var serialNumberHigh: UInt16?
    /// Page 3.
    public var hardwareVersion: UInt8?
    public var softwareVersion: UInt8?
    public var modelNumber: UInt8?
    /// Page 4: previous heart beat event time, 1/1024 s.
    public var previousEventTime1024: UInt16?
    /// Page 6.
    public var featuresSupported: UInt8?
    public var featuresEnabled: UInt8?
    /// Page 7.
    public var battery: ANTBattery?

    public static func parse(_ p: Payload) throws(DecodeError) -> ANTHeartRatePage {
        try requireANTPage(p)
        var m = ANTHeartRatePage(page: p[0] & 0x7F, toggle: p[0] & 0x80 != 0, eventTime1024: p.u16(at: 4),
                                 beatCount: p[6], heartRateBpm: p[7])
        switch m.page {
        case 1: m.operatingTimeS = p.u24(at: 1) * 2
        case 2: m.manufacturerID = p[1]; m.serialNumberHigh = p.u16(at: 2)
        case 3: m.hardwareVersion = p[1]; m.softwareVersion = p[2]; m.modelNumber = p[3]
        case 4: m.previousEventTime1024 = p.u16(at: 2)
        case 6: m.featuresSupported = p[2]; m.featuresEnabled = p[3]
        case 7: m.battery = ANTBattery(fractional: p[2], descriptive: p[3], percent: p[1] <= 100 ? p[1] : nil)
        default: break
        }
        return m
    }

    /// Page-specific fields are meaningful only once the toggle bit has been seen to change (a
    /// legacy strap has junk in byte 0); `trusted` says whether to show them.
    public func visitFields<V: FieldVisitor>(_ v: inout V, pagesTrusted: Bool) {
        v.int("data_page", Int64(page))
        v.bool("toggle", toggle)
        v.double("heart_beat_event_time_s", Double(eventTime1024) / 1024)
        v.int("heart_beat_count", Int64(beatCount))
        v.int("computed_heart_rate_bpm", Int64(heartRateBpm))
        guard pagesTrusted else { return }
        v.int("cumulative_operating_time_s", operatingTimeS)
        v.int("manufacturer_id", manufacturerID)
        v.int("serial_number_high", serialNumberHigh)
        v.int("hardware_version", hardwareVersion)
        v.int("software_version", softwareVersion)
        v.int("model_number", modelNumber)
        if let t = previousEventTime1024 { v.double("previous_heart_beat_event_time_s", Double(t) / 1024) }
        v.int("features_supported", featuresSupported)
        v.int("features_enabled", featuresEnabled)
        battery?.visitFields(&v)
    }
}

/// The ANT+ common pages every profile may send: 0x50 manufacturer, 0x51 product, 0x52 battery.
public enum ANTCommonPage: Sendable, Hashable {
    /// Common page 0x50.
    case manufacturer(hardwareRevision: UInt8, manufacturerID: UInt16, modelNumber: UInt16)
    /// Common page 0x51.
    case product(softwareSupplemental: UInt8, softwareMain: UInt8, serialNumber: UInt32)
    /// Common page 0x52.
    case battery(identifier: UInt8, operatingTimeS: UInt32, ANTBattery)

    /// The common page in `p`; nil for any other page number.
    public static func parse(_ p: Payload) throws(DecodeError) -> ANTCommonPage? {
        try requireANTPage(p)
        switch p[0] {
        case 0x50:
            return .manufacturer(hardwareRevision: p[3], manufacturerID: p.u16(at: 4), modelNumber: p.u16(at: 6))
        case 0x51:
            return .product(softwareSupplemental: p[2], softwareMain: p[3], serialNumber: p.u32(at: 4))
        case 0x52:
            // Operating time: bytes 3–5, 16 s units when byte 7 bit 7 is clear, 2 s when set.
            let seconds = p.u24(at: 3) * (p[7] & 0x80 != 0 ? 2 : 16)
            return .battery(identifier: p[2], operatingTimeS: seconds, ANTBattery(fractional: p[6], descriptive: p[7] & 0x7F))
        default:
            return nil
        }
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        switch self {
        case let .manufacturer(hw, mfr, model):
            v.int("data_page", 0x50)
            v.int("hardware_revision", Int64(hw))
            v.int("manufacturer_id", Int64(mfr))
            v.int("model_number", Int64(model))
        case let .product(sup, main, serial):
            v.int("data_page", 0x51)
            v.int("software_revision_supplemental", Int64(sup))
            v.int("software_revision_main", Int64(main))
            v.int("serial_number", Int64(serial))
        case let .battery(id, time, b):
            v.int("data_page", 0x52)
            v.int("battery_identifier", Int64(id))
            v.int("cumulative_operating_time_s", Int64(time))
            b.visitFields(&v)
        }
    }

    /// The battery's charge, where the page gives one.
    public var batteryPercent: Int? {
        if case .battery(_, _, let b) = self { b.status.approximatePercent } else { nil }
    }
}

/// An ANT+ bike power page (device type 11): the four power pages and the common pages.
public enum ANTPowerPage: Sendable, Hashable {
    /// 0x10.
    case powerOnly(eventCount: UInt8, pedalPower: UInt8, cadenceRpm: UInt8?, accumulatedPowerW: UInt16, instantaneousPowerW: UInt16)
    /// 0x11 (wheel) and 0x12 (crank): period in 1/2048 s, torque in 1/32 Nm.
    case torque(crank: Bool, eventCount: UInt8, ticks: UInt8, cadenceRpm: UInt8?, accumulatedPeriod2048: UInt16, accumulatedTorque32: UInt16)
    /// 0x13: ½ % units, nil = 0xFF (invalid). `smoothnessCombined` when byte 5 is 0xFE.
    case torqueEffectivenessAndSmoothness(eventCount: UInt8, leftTE: UInt8?, rightTE: UInt8?, leftPS: UInt8?, rightPS: UInt8?, smoothnessCombined: Bool)
    /// Common pages 0x50–0x52.
    case common(ANTCommonPage)

    public static func parse(_ p: Payload) throws(DecodeError) -> ANTPowerPage {
        try requireANTPage(p)
        func valid(_ b: UInt8) -> UInt8? { b == 0xFF ? nil : b }
        switch p[0] {
        case 0x10:
            return .powerOnly(eventCount: p[1], pedalPower: p[2], cadenceRpm: valid(p[3]),
                              accumulatedPowerW: p.u16(at: 4), instantaneousPowerW: p.u16(at: 6))
        case 0x11, 0x12:
            return .torque(crank: p[0] == 0x12, eventCount: p[1], ticks: p[2], cadenceRpm: valid(p[3]),
                           accumulatedPeriod2048: p.u16(at: 4), accumulatedTorque32: p.u16(at: 6))
        case 0x13:
            let combined = p[5] == 0xFE
            return .torqueEffectivenessAndSmoothness(eventCount: p[1], leftTE: valid(p[2]), rightTE: valid(p[3]),
                                                     leftPS: valid(p[4]), rightPS: combined ? nil : valid(p[5]),
                                                     smoothnessCombined: combined)
        default:
            guard let c = try ANTCommonPage.parse(p) else { throw DecodeError(.unknownPage, have: Int(p[0])) }
            return .common(c)
        }
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        switch self {
        case let .powerOnly(e, pedal, cad, acc, inst):
            v.int("data_page", 0x10)
            v.int("event_count", Int64(e))
            if pedal != 0xFF {
                v.int("pedal_power_percent", Int64(pedal & 0x7F))
                v.string("pedal_power_reference", pedal & 0x80 != 0 ? "right" : "unknown")
            }
            v.int("instantaneous_cadence_rpm", cad)
            v.int("accumulated_power_w", Int64(acc))
            v.int("instantaneous_power_w", Int64(inst))
        case let .torque(crank, e, ticks, cad, period, torque):
            v.int("data_page", crank ? 0x12 : 0x11)
            v.int("event_count", Int64(e))
            v.int(crank ? "crank_ticks" : "wheel_ticks", Int64(ticks))
            v.int("instantaneous_cadence_rpm", cad)
            v.double("accumulated_period_s", Double(period) / 2048)
            v.double("accumulated_torque_nm", Double(torque) / 32)
        case let .torqueEffectivenessAndSmoothness(e, lte, rte, lps, rps, combined):
            v.int("data_page", 0x13)
            v.int("event_count", Int64(e))
            if let x = lte { v.double("left_torque_effectiveness_percent", Double(x) / 2) }
            if let x = rte { v.double("right_torque_effectiveness_percent", Double(x) / 2) }
            if let x = lps { v.double(combined ? "combined_pedal_smoothness_percent" : "left_pedal_smoothness_percent", Double(x) / 2) }
            if let x = rps { v.double("right_pedal_smoothness_percent", Double(x) / 2) }
        case .common(let c):
            c.visitFields(&v)
        }
    }
}

/// ANT+ bike speed and cadence, combined sensor (device type 121): no page byte.
public struct ANTSpeedCadencePage: Sendable, Hashable {
    public var cadenceEventTime1024: UInt16
    public var crankRevolutions: UInt16
    public var speedEventTime1024: UInt16
    public var wheelRevolutions: UInt16

    public static func parse(_ p: Payload) throws(DecodeError) -> ANTSpeedCadencePage {
        try requireANTPage(p)
        return ANTSpeedCadencePage(cadenceEventTime1024: p.u16(at: 0), crankRevolutions: p.u16(at: 2),
                                   speedEventTime1024: p.u16(at: 4), wheelRevolutions: p.u16(at: 6))
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        v.double("cadence_event_time_s", Double(cadenceEventTime1024) / 1024)
        v.int("cumulative_cadence_revolutions", Int64(crankRevolutions))
        v.double("speed_event_time_s", Double(speedEventTime1024) / 1024)
        v.int("cumulative_wheel_revolutions", Int64(wheelRevolutions))
    }
}

/// ANT+ speed-only (123) or cadence-only (122) page.
public struct ANTSpeedOrCadencePage: Sendable, Hashable {
    public var page: UInt8
    public var toggle: Bool
    public var eventTime1024: UInt16
    public var revolutions: UInt16
    public var operatingTimeS: UInt32?
    public var manufacturerID: UInt8?
    public var serialNumberHigh: UInt16?
    public var hardwareVersion: UInt8?
    public var softwareVersion: UInt8?
    public var modelNumber: UInt8?
    public var battery: ANTBattery?
    /// Page 5: the sensor reports it has stopped.
    public var stopped: Bool?

    public static func parse(_ p: Payload) throws(DecodeError) -> ANTSpeedOrCadencePage {
        try requireANTPage(p)
        var m = ANTSpeedOrCadencePage(page: p[0] & 0x7F, toggle: p[0] & 0x80 != 0,
                                      eventTime1024: p.u16(at: 4), revolutions: p.u16(at: 6))
        switch m.page {
        case 1: m.operatingTimeS = p.u24(at: 1) * 2
        case 2: m.manufacturerID = p[1]; m.serialNumberHigh = p.u16(at: 2)
        case 3: m.hardwareVersion = p[1]; m.softwareVersion = p[2]; m.modelNumber = p[3]
        case 4: m.battery = ANTBattery(fractional: p[2], descriptive: p[3])
        case 5: m.stopped = p[1] & 1 != 0
        default: break
        }
        return m
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V, speed: Bool, pagesTrusted: Bool) {
        v.int("data_page", Int64(page))
        v.bool("toggle", toggle)
        v.double(speed ? "speed_event_time_s" : "cadence_event_time_s", Double(eventTime1024) / 1024)
        v.int(speed ? "cumulative_wheel_revolutions" : "cumulative_cadence_revolutions", Int64(revolutions))
        guard pagesTrusted else { return }
        v.int("cumulative_operating_time_s", operatingTimeS)
        v.int("manufacturer_id", manufacturerID)
        v.int("serial_number_high", serialNumberHigh)
        v.int("hardware_version", hardwareVersion)
        v.int("software_version", softwareVersion)
        v.int("model_number", modelNumber)
        battery?.visitFields(&v)
        if let s = stopped { v.bool("stopped", s) }
    }
}
