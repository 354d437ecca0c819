import RideModel

// Rear radars (docs/sensors.md, "Rear radar"): the ANT+ Bike Radar profile's pages and Garmin
// Varia's BLE radar notifications, parsed without state. `SensorDecoder` keeps what spans frames
// (the two ANT+ target pages, BLE fragments, closing speeds estimated from range).

/// Field facts of the ANT+ Bike Radar profile (device type 40) as decoded here. The bit order of
/// the packed fields (least significant first, little-endian) is decided in docs/sensors.md from
/// a real radar's page (Tests/SensorsTests/Corpus/radar).
public enum ANTRadarField {
    /// One range step, m (6 bits: 0–196.9 m).
    public static let rangeStepM = 3.125
    /// One closing-speed step, m/s (4 bits: 0–45.6 m/s).
    public static let speedStepMps = 3.04
}

/// One target of an ANT+ radar targets page (threat 0 is an empty slot).
public struct ANTRadarTargetFields: Sendable, Hashable {
    public var threatLevel: UInt8
    public var side: UInt8
    public var range: UInt8
    public var speed: UInt8
}

/// An ANT+ Bike Radar page (device type 40).
public enum ANTRadarPage: Sendable {
    /// Page 48 (targets 1–4, `firstTarget` 0) or 49 (targets 5–8, `firstTarget` 4): per target a
    /// 2-bit threat level (byte 1), a 2-bit side (byte 2), a 6-bit range (bytes 3–5) and a 4-bit
    /// closing speed (bytes 6–7), the first target in the least significant bits.
    case targets(firstTarget: Int, InlineArray<4, ANTRadarTargetFields>)
    /// Page 1, device status: 0 broadcasting, 1 shutdown requested, 2 shutdown aborted, 3
    /// shutdown forced (the radar is switching off).
    case status(state: UInt8)
    /// Common pages 0x50–0x52.
    case common(ANTCommonPage)

    public static let targetsPageA: UInt8 = 48
    public static let targetsPageB: UInt8 = 49

    public static func parse(_ p: Payload) throws(DecodeError) -> ANTRadarPage {
        try requireANTPage(p)
        switch p[0] {
        case targetsPageA, targetsPageB:
            let ranges = p.u24(at: 3)
            let speeds = p.u16(at: 6)
            var t = InlineArray<4, ANTRadarTargetFields>(repeating: ANTRadarTargetFields(threatLevel: 0, side: 0, range: 0, speed: 0))
            for i in 0..<4 {
                t[i] = ANTRadarTargetFields(threatLevel: (p[1] >> UInt8(2 * i)) & 3, side: (p[2] >> UInt8(2 * i)) & 3,
                                            range: UInt8((ranges >> UInt32(6 * i)) & 0x3F), speed: UInt8((speeds >> UInt16(4 * i)) & 0x0F))
            }
            return .targets(firstTarget: p[0] == targetsPageA ? 0 : 4, t)
        case 1:
            return .status(state: p[1] & 3)
        default:
            guard let c = try ANTCommonPage.parse(p) else { throw DecodeError(.unknownPage, have: Int(p[0])) }
            return .common(c)
        }
    }

    /// Whether a status page says the radar is switching off.
    public var isShutdown: Bool {
        if case .status(let s) = self { s == 1 || s == 3 } else { false }
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        switch self {
        case let .targets(first, t):
            v.int("data_page", Int64(first == 0 ? Self.targetsPageA : Self.targetsPageB))
            v.int("first_target", Int64(first + 1))
        case .status(let s):
            v.int("data_page", 1)
            v.string("device_state", s == 0 ? "broadcasting" : s == 1 ? "shutdown_requested" : s == 2 ? "shutdown_aborted" : "shutdown_forced")
        case .common(let c):
            c.visitFields(&v)
        }
    }
}

/// A notification of Garmin Varia's BLE radar characteristic (6a4e3203-…): a header byte (high
/// nibble a sequence counter, low nibble 0x2 for a whole frame or its last fragment, 0x0 for a
/// fragment more follow), then three bytes per vehicle: track id, range (m), closing speed (km/h,
/// docs/sensors.md: 0 and 1 are "not reported", as a RearVue 820 sends them).
public enum VariaRadarMessage: Sendable {
    /// The header alone: a clear road.
    case clear(header: UInt8)
    /// Vehicles (`count` of them, at most `perNotificationMax`).
    case targets(header: UInt8, count: Int, InlineArray<6, VariaRadarTriplet>)
    /// The RearVue's 6-byte diagnostic (first byte 0x06): no vehicles in it.
    case diagnostic

    /// Vehicles one notification carries at most (20 bytes).
    public static let perNotificationMax = 6
    /// The header's low nibble of a fragment more follow.
    public static let fragmentFollows: UInt8 = 0x0

    public static func parse(_ p: Payload) throws(DecodeError) -> VariaRadarMessage {
        guard p.count >= 1 else { throw DecodeError(.truncated, need: 1, have: 0) }
        if p.count == 6 && p[0] == 0x06 { return .diagnostic }
        guard (p.count - 1) % 3 == 0 else { throw DecodeError(.wrongLength, need: p.count + 3 - (p.count - 1) % 3, have: p.count) }
        let n = (p.count - 1) / 3
        guard n <= perNotificationMax else { throw DecodeError(.wrongLength, need: 1 + 3 * perNotificationMax, have: p.count) }
        if n == 0 { return .clear(header: p[0]) }
        var t = InlineArray<6, VariaRadarTriplet>(repeating: VariaRadarTriplet(track: 0, range: 0, speed: 0))
        for i in 0..<n { t[i] = VariaRadarTriplet(track: p[1 + 3 * i], range: p[2 + 3 * i], speed: p[3 + 3 * i]) }
        return .targets(header: p[0], count: n, t)
    }

    public func visitFields<V: FieldVisitor>(_ v: inout V) {
        switch self {
        case .clear(let h):
            v.int("sequence", Int64(h >> 4))
        case let .targets(h, n, _):
            v.int("sequence", Int64(h >> 4))
            v.bool("more_fragments", h & 0x0F == Self.fragmentFollows)
            v.int("vehicles_in_notification", Int64(n))
        case .diagnostic:
            v.string("message", "diagnostic")
        }
    }
}

/// One vehicle's three bytes in a Varia notification.
public struct VariaRadarTriplet: Sendable, Hashable {
    public var track: UInt8
    public var range: UInt8
    public var speed: UInt8

    /// Padding or a marker, not a vehicle: an all-zero triplet, the RearVue's 0xFD status marker,
    /// a range of 0xFF ("far, uncertain").
    public var isVehicle: Bool {
        !(track == 0 && range == 0 && speed == 0) && !(track == 0xFD && range == 0) && range != 0xFF
    }

    /// The closing speed the radar reports, m/s; nil for 0 and 1 (a RearVue 820's flag byte).
    public var closingSpeedMps: Double? { speed > 1 ? Double(speed) / 3.6 : nil }
}

/// How a vehicle's threat is judged where the radar does not say (BLE).
public enum RadarThreatRule {
    /// Closing at this speed or faster is a fast approach (40 km/h: a car at 65 km/h passing a
    /// rider at 25 km/h).
    public static let fastApproachMps = 11.1

    public static func threat(closingSpeedMps: Double?) -> RadarThreat {
        guard let s = closingSpeedMps else { return .approaching }
        return s >= fastApproachMps ? .fastApproach : .approaching
    }
}

/// A BLE radar's vehicle, followed to estimate its closing speed from its range.
struct RadarTrack: Sendable {
    /// The range is compared over at least this long (1 m steps: shorter windows are noise).
    static let estimateWindowMs: Int64 = 1_000
    /// A track not seen this long is a new vehicle when its id comes back.
    static let forgetAfterMs: Int64 = 3_000

    var inUse = false
    var track: UInt8 = 0
    var referenceRangeM = 0.0
    var referenceMs: Int64 = 0
    var lastSeenMs: Int64 = 0
    var closingSpeedMps: Double?

    init() {}

    init(track: UInt8, referenceRangeM: Double, referenceMs: Int64, lastSeenMs: Int64) {
        inUse = true
        self.track = track
        self.referenceRangeM = referenceRangeM
        self.referenceMs = referenceMs
        self.lastSeenMs = lastSeenMs
    }
}
