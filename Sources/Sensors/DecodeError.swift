/// Every kind of bad input the sensor path can meet. Each is counted (see `SensorCounters`) and
/// never stops the work: the offending frame or payload is dropped, the next one is read.
public enum BadInput: UInt8, CaseIterable, Sendable, Hashable, CustomStringConvertible {
    /// A payload shorter than its flags or page announce.
    case truncated = 0
    /// A payload of the wrong length for its profile (an ANT+ page that is not 8 bytes, bytes left
    /// over after the last field).
    case wrongLength
    /// Reserved flag bits set; the known fields are still decoded.
    case reservedFlags
    /// A value outside the physical range (a heart rate of 300, a 600 rpm cadence, a counter that
    /// jumped): rejected as a spike, the previous value is held.
    case absurdValue
    /// An ANT+ page this decoder does not know.
    case unknownPage
    /// A frame for a profile (device type or characteristic) that has no decoder.
    case unknownProfile
    /// A frame from a sensor that is not paired for this ride.
    case unpairedSensor
    /// A bridge frame with a protocol version this app does not speak.
    case badVersion
    /// A bridge frame of an unknown kind.
    case badFrameKind
    /// A bridge frame whose length or fields do not add up.
    case malformedFrame
    /// A serial frame whose CRC does not match (line noise, a lost byte).
    case serialChecksum
    /// A serial frame longer than any valid frame (garbage without delimiters).
    case serialOversize
    /// A serial frame whose COBS encoding is broken.
    case serialEncoding
    /// A sensor sending frames faster than any profile does; the excess is dropped.
    case rateLimited
    /// An event counter that moved while its event time did not (or the reverse, for profiles
    /// where that cannot happen).
    case inconsistentEvent
    /// A paired device the bridge connected to offers none of the measurements its advertised
    /// service promises (a link frame in state `unusable`, protocol version 2).
    case unusableSensor

    public static let countMax = 16

    public var description: String {
        switch self {
        case .truncated: "truncated"
        case .wrongLength: "wrong_length"
        case .reservedFlags: "reserved_flags"
        case .absurdValue: "absurd_value"
        case .unknownPage: "unknown_page"
        case .unknownProfile: "unknown_profile"
        case .unpairedSensor: "unpaired_sensor"
        case .badVersion: "bad_version"
        case .badFrameKind: "bad_frame_kind"
        case .malformedFrame: "malformed_frame"
        case .serialChecksum: "serial_checksum"
        case .serialOversize: "serial_oversize"
        case .serialEncoding: "serial_encoding"
        case .rateLimited: "rate_limited"
        case .inconsistentEvent: "inconsistent_event"
        case .unusableSensor: "unusable_sensor"
        }
    }
}

/// A payload that could not be decoded, with what to do about it.
public struct DecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var kind: BadInput
    public var needBytes: Int
    public var haveBytes: Int

    public init(_ kind: BadInput, need: Int = 0, have: Int = 0) {
        self.kind = kind
        self.needBytes = need
        self.haveBytes = have
    }

    public var description: String {
        switch kind {
        case .truncated:
            "truncated payload: its flags announce \(needBytes) bytes but it has \(haveBytes); check that the bridge forwards the whole value"
        case .wrongLength:
            "wrong payload length \(haveBytes) (expected \(needBytes)); \(needBytes == antPageBytes ? "ANT+ pages are 8 bytes, " : "")check the bridge or the hex"
        case .unknownPage:
            "unknown ANT+ data page; it is skipped (the profile's main pages still decode)"
        case .unknownProfile:
            "no decoder for this profile; supported: BLE 2a37 2a5b 2a63 2a65 2a19, ANT+ 120 11 121 122 123"
        default:
            "\(kind): the payload was dropped"
        }
    }
}

/// Counters of bad input, indexed by `BadInput`. Fixed size, no allocation.
public struct BadInputCounters: Sendable, Hashable {
    var counts = InlineArray<16, UInt64>(repeating: 0)

    public init() {}

    public subscript(kind: BadInput) -> UInt64 { counts[Int(kind.rawValue)] }

    public mutating func count(_ kind: BadInput, by n: UInt64 = 1) { counts[Int(kind.rawValue)] &+= n }

    public var total: UInt64 {
        var t: UInt64 = 0
        for i in 0..<BadInput.countMax { t &+= counts[i] }
        return t
    }

    public static func == (a: Self, b: Self) -> Bool {
        for i in 0..<BadInput.countMax where a.counts[i] != b.counts[i] { return false }
        return true
    }

    public func hash(into h: inout Hasher) { for i in 0..<BadInput.countMax { h.combine(counts[i]) } }
}
