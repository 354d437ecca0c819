// The bridge protocol, version 1 (docs/bridge-protocol.md). One frame is one SOCK_SEQPACKET
// packet, or one COBS-encoded, CRC-checked, zero-delimited record on a serial line.

/// A BLE device address (48 bits) and whether it is a random address.
public struct BLEAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address as a number: "AA:BB:CC:DD:EE:FF" is 0xAABBCCDDEEFF.
    public var value: UInt64
    public var isRandom: Bool

    public init(value: UInt64, isRandom: Bool = false) {
        self.value = value & 0xFFFF_FFFF_FFFF
        self.isRandom = isRandom
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (case-insensitive).
    public init?(_ text: String, isRandom: Bool = false) {
        guard let p = Payload(hex: text), p.count == 6 else { return nil }
        var v: UInt64 = 0
        for i in 0..<6 { v = v << 8 | UInt64(p[i]) }
        self.init(value: v, isRandom: isRandom)
    }

    public var description: String {
        let digits: [Character] = Array("0123456789ABCDEF")
        var s = ""
        for i in (0..<6).reversed() {
            let b = Int((value >> UInt64(8 * i)) & 0xFF)
            s.append(digits[b >> 4]); s.append(digits[b & 15])
            if i > 0 { s.append(":") }
        }
        return s
    }
}

/// Who sent a reading, whatever carried it: an ANT+ channel id or a BLE address (a radio sensor
/// behind the bridge), or a receiver on the board itself. The data source pairs, ranks and tracks
/// every kind the same way; only the bridge frame is limited to the radio kinds.
public enum SourceIdentity: Sendable, Hashable, CustomStringConvertible {
    case ant(deviceNumber: UInt16, deviceType: UInt8, transmissionType: UInt8)
    case ble(BLEAddress)
    /// A receiver wired to the board (a GPS through gpsd, a barometer on I²C): its readings arrive
    /// already decoded (`DataSource.handle(_:from:at:_:)`), never in a bridge frame.
    case onboard(OnboardSource)

    /// The radio it came over; nil for an onboard source.
    public var radio: Transport? {
        switch self {
        case .ant: .ant
        case .ble: .ble
        case .onboard: nil
        }
    }

    public var description: String {
        switch self {
        case let .ant(n, t, x): "ant:\(n)/\(t)/\(x)"
        case let .ble(a): "ble:\(a)\(a.isRandom ? "/random" : "")"
        case let .onboard(s): "onboard:\(s)"
        }
    }
}

/// Receivers on the board (not behind the bridge). The GPS input (gpsd) and a barometer are the
/// kinds the data source is ready for; each reports through `DataSource.handle(_:from:at:_:)`.
public enum OnboardSource: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case gnss = 0
    case barometer = 1

    public var description: String {
        switch self {
        case .gnss: "gnss"
        case .barometer: "barometer"
        }
    }
}

/// A sensor's link state as the bridge sees it.
public enum LinkState: UInt8, Sendable, Hashable, CustomStringConvertible {
    case searching = 0
    case connected = 1
    case disconnected = 2
    public var description: String {
        switch self {
        case .searching: "searching"
        case .connected: "connected"
        case .disconnected: "disconnected"
        }
    }
}

/// The body of a bridge frame.
public enum BridgeMessage: Sendable, Hashable {
    /// First frame after connecting: the newest protocol version the bridge speaks, the radios it
    /// has (bit 0 ANT+, bit 1 BLE) and an id that changes when the bridge restarts.
    case hello(protocolVersionMax: UInt8, radios: UInt8, bridgeID: UInt32)
    /// Sent at least once a second when nothing else is.
    case heartbeat(sequence: UInt32)
    /// A raw payload from a sensor: the profile is the ANT+ device type or the GATT UUID.
    case data(SourceIdentity, profileCode: UInt16, Payload)
    /// A sensor's link changed.
    case link(SourceIdentity, profileCode: UInt16, LinkState)
}

/// A frame's bytes, held inline.
public struct FrameBytes: Sendable {
    /// Capacity: an encoded serial frame (`SerialFraming.encodedBytesMax`) fits.
    public static let capacity = 96
    var storage = InlineArray<96, UInt8>(repeating: 0)
    public private(set) var count = 0

    public init() {}

    mutating func append(_ b: UInt8) {
        precondition(count < Self.capacity, "frame buffer overflow")
        storage[count] = b
        count += 1
    }

    mutating func appendLE<T: FixedWidthInteger>(_ v: T) {
        for i in 0..<(T.bitWidth / 8) { append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }

    public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < count)
        return storage[i]
    }

    public var bytes: [UInt8] { (0..<count).map { storage[$0] } }

    /// Calls `body` with the bytes, without copying them to the heap.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: storage) { raw in try body(UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
    }
}

/// A bridge protocol frame.
public struct BridgeFrame: Sendable, Hashable {
    public static let version: UInt8 = 1
    /// Bytes before the body: version, kind, bridge time.
    public static let headerBytes = 10
    /// The longest frame: a data frame with a `Payload.bytesMax` payload.
    public static let bytesMax = headerBytes + 11 + Payload.bytesMax

    enum Kind: UInt8 { case hello = 1, heartbeat = 2, data = 3, link = 4 }

    /// The bridge's monotonic clock, microseconds (for ordering and latency; the app stamps
    /// samples with its own clock on receipt).
    public var bridgeTimeUs: UInt64
    public var message: BridgeMessage

    public init(bridgeTimeUs: UInt64, _ message: BridgeMessage) {
        self.bridgeTimeUs = bridgeTimeUs
        self.message = message
    }

    /// The frame's bytes.
    public func encoded() -> FrameBytes {
        var out = FrameBytes()
        out.append(Self.version)
        switch message {
        case .hello: out.append(Kind.hello.rawValue)
        case .heartbeat: out.append(Kind.heartbeat.rawValue)
        case .data: out.append(Kind.data.rawValue)
        case .link: out.append(Kind.link.rawValue)
        }
        out.appendLE(bridgeTimeUs)
        switch message {
        case let .hello(v, radios, id):
            out.append(v); out.append(radios); out.appendLE(id)
        case let .heartbeat(seq):
            out.appendLE(seq)
        case let .data(who, code, payload):
            Self.appendSensor(who, code, to: &out)
            out.append(UInt8(payload.count))
            for i in 0..<payload.count { out.append(payload[i]) }
        case let .link(who, code, state):
            Self.appendSensor(who, code, to: &out)
            out.append(state.rawValue)
        }
        return out
    }

    static func appendSensor(_ who: SourceIdentity, _ code: UInt16, to out: inout FrameBytes) {
        switch who {
        case let .ant(n, t, x):
            out.append(Transport.ant.rawValue)
            out.appendLE(n); out.append(t); out.append(x)
            out.append(0); out.append(0); out.append(0)
        case let .ble(a):
            out.append(Transport.ble.rawValue)
            for i in (0..<6).reversed() { out.append(UInt8(truncatingIfNeeded: a.value >> UInt64(8 * i))) }
            out.append(a.isRandom ? 1 : 0)
        case .onboard:
            // Not a radio sensor: written as transport 0, which every receiver rejects as a
            // malformed frame (a bug in the sender, counted, never a crash).
            for _ in 0..<8 { out.append(0) }
        }
        out.appendLE(code)
    }

    /// The bridge's send time of a data frame, read from its header alone (latency measurements;
    /// the runtime parses the frame as usual); nil for any other frame.
    public static func dataFrameTimeUs(_ b: UnsafeRawBufferPointer) -> UInt64? {
        guard b.count >= headerBytes, b[0] == version, b[1] == Kind.data.rawValue else { return nil }
        var us: UInt64 = 0
        for i in (2..<10).reversed() { us = us << 8 | UInt64(b[i]) }
        return us
    }

    /// Parses one frame; every way it can be wrong is a typed `DecodeError`.
    public static func parse(_ b: UnsafeRawBufferPointer) throws(DecodeError) -> BridgeFrame {
        guard b.count >= headerBytes else { throw DecodeError(.malformedFrame, need: headerBytes, have: b.count) }
        guard b[0] == version else { throw DecodeError(.badVersion, need: Int(version), have: Int(b[0])) }
        guard let kind = Kind(rawValue: b[1]) else { throw DecodeError(.badFrameKind, have: Int(b[1])) }
        func le(_ at: Int, _ n: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in (0..<n).reversed() { v = v << 8 | UInt64(b[at + i]) }
            return v
        }
        func exact(_ n: Int) throws(DecodeError) {
            guard b.count == n else { throw DecodeError(.malformedFrame, need: n, have: b.count) }
        }
        let time = le(2, 8)
        switch kind {
        case .hello:
            try exact(16)
            return BridgeFrame(bridgeTimeUs: time, .hello(protocolVersionMax: b[10], radios: b[11], bridgeID: UInt32(le(12, 4))))
        case .heartbeat:
            try exact(14)
            return BridgeFrame(bridgeTimeUs: time, .heartbeat(sequence: UInt32(le(10, 4))))
        case .data, .link:
            guard b.count >= 21 else { throw DecodeError(.malformedFrame, need: 21, have: b.count) }
            let who: SourceIdentity
            switch Transport(rawValue: b[10]) {
            case .ant:
                who = .ant(deviceNumber: UInt16(le(11, 2)), deviceType: b[13], transmissionType: b[14])
            case .ble:
                var v: UInt64 = 0
                for i in 11..<17 { v = v << 8 | UInt64(b[i]) }
                guard b[17] <= 1 else { throw DecodeError(.malformedFrame) }
                who = .ble(BLEAddress(value: v, isRandom: b[17] == 1))
            case nil:
                throw DecodeError(.malformedFrame)
            }
            let code = UInt16(le(18, 2))
            if kind == .link {
                try exact(21)
                guard let state = LinkState(rawValue: b[20]) else { throw DecodeError(.malformedFrame) }
                return BridgeFrame(bridgeTimeUs: time, .link(who, profileCode: code, state))
            }
            let n = Int(b[20])
            guard n <= Payload.bytesMax else { throw DecodeError(.malformedFrame, need: Payload.bytesMax, have: n) }
            try exact(21 + n)
            var p = Payload()
            for i in 0..<n { p.append(b[21 + i]) }
            return BridgeFrame(bridgeTimeUs: time, .data(who, profileCode: code, p))
        }
    }

    public static func parse(_ bytes: [UInt8]) throws(DecodeError) -> BridgeFrame {
        let r: Result<BridgeFrame, DecodeError> = bytes.withUnsafeBytes { b in
            do throws(DecodeError) { return .success(try parse(b)) } catch { return .failure(error) }
        }
        return try r.get()
    }
}
