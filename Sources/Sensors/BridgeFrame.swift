import RideModel

// The bridge protocol, versions 1 and 2 (docs/bridge-protocol.md). One frame is one SOCK_SEQPACKET
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
    /// Version 2: connected, but the device offers none of the measurements its advertised
    /// service promises (the bridge counts it, disconnects, tries again later).
    case unusable = 3
    public var description: String {
        switch self {
        case .searching: "searching"
        case .connected: "connected"
        case .disconnected: "disconnected"
        case .unusable: "unusable"
        }
    }
}

/// UTF-8 text of at most `capacity` bytes held inline (no allocation when a frame is parsed):
/// a found frame's name, a config-state frame's reason.
public struct InlineText<let capacity: Int>: Sendable, Hashable {
    public static var bytesMax: Int { capacity }
    var storage = InlineArray<capacity, UInt8>(repeating: 0)
    public private(set) var count = 0

    public init() {}

    /// `text` cut at a character boundary to `bytesMax` bytes.
    public init(_ text: String) {
        for c in text {
            let u = Array(c.utf8)
            if count + u.count > Self.bytesMax { break }
            for b in u { storage[count] = b; count += 1 }
        }
    }

    init(bytes b: UnsafeRawBufferPointer, from: Int, count n: Int) {
        for i in 0..<min(n, Self.bytesMax) { storage[i] = b[from + i] }
        count = min(n, Self.bytesMax)
    }

    public subscript(i: Int) -> UInt8 { storage[i] }
    /// The text (bytes that are not UTF-8 as U+FFFD).
    public var text: String { String(decoding: (0..<count).map { storage[$0] }, as: UTF8.self) }

    public static func == (a: Self, b: Self) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a.storage[i] != b.storage[i] { return false }
        return true
    }

    public func hash(into h: inout Hasher) {
        h.combine(count)
        for i in 0..<count { h.combine(storage[i]) }
    }
}

/// A sensor's advertised name in a found frame: at most 24 UTF-8 bytes.
public typealias SensorName = InlineText<24>

/// The bridge's words about the config file in a config-state frame (version 3): at most 64
/// UTF-8 bytes.
public typealias BridgeNote = InlineText<64>

/// What a search found (a found frame): the sensor, what it offers (BLE: the `BridgeFrame.service*`
/// bits of the services it advertises; ANT+: its device type), its signal strength (dBm; nil when
/// the radio did not say) and its advertised name.
public struct FoundSensorFrame: Sendable, Hashable {
    public var identity: SourceIdentity
    public var profileCode: UInt16
    public var rssi: Int8?
    public var name: SensorName

    public init(_ identity: SourceIdentity, profileCode: UInt16, rssi: Int8?, name: SensorName) {
        self.identity = identity
        self.profileCode = profileCode
        self.rssi = rssi
        self.name = name
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

    // Version 2, bridge to app.
    /// A sensor a search found.
    case found(FoundSensorFrame)
    /// A search started or ended; sensors found so far.
    case scanState(running: Bool, radios: UInt8, found: UInt16)
    /// A characteristic's notification socket, passed with the frame (SCM_RIGHTS): the app reads
    /// the values itself. The descriptor is the transport's business, not the frame's.
    case notificationSocket(SourceIdentity, profileCode: UInt16)

    // Version 3, bridge to app.
    /// Whether the bridge could read the config file it was told to (or saw change): when not,
    /// it keeps the sensors it had, and says where the file is wrong (`line`, 0 when it cannot
    /// tell) and why.
    case configState(readable: Bool, line: UInt16, BridgeNote)

    // Version 2, app to bridge.
    /// The app's newest version and what it takes (`BridgeFrame.appTakesSockets`).
    case appHello(protocolVersionMax: UInt8, flags: UInt8)
    /// Start (for `seconds`) or stop a search with the radios (bit 0 ANT+, bit 1 BLE).
    case scanRequest(start: Bool, radios: UInt8, seconds: UInt16)
    /// The paired sensors in the config file changed: read them again.
    case reload
    /// The app will not read this notification socket: the bridge reads it again.
    case socketReturned(SourceIdentity, profileCode: UInt16)
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
    /// The version byte of kinds 1–4.
    public static let version: UInt8 = 1
    /// The newest version this app speaks (its app hello says so).
    public static let versionMax: UInt8 = 3
    /// The version byte of kinds 5–11 (and of a link in state 3), and of kind 12.
    public static let version2: UInt8 = 2
    public static let version3: UInt8 = 3
    /// App hello flag: the app reads notification sockets handed to it.
    public static let appTakesSockets: UInt8 = 1
    /// Found frames' BLE service bits (`SensorKind.foundServiceBit`).
    public static let serviceHeartRate = SensorKind.heartRate.foundServiceBit
    public static let serviceCyclingPower = SensorKind.power.foundServiceBit
    public static let serviceSpeedCadence = SensorKind.speedCadence.foundServiceBit
    /// Signal strength "unknown" on the wire.
    public static let rssiUnknown: Int8 = 127
    /// Bytes before the body: version, kind, bridge time.
    public static let headerBytes = 10
    /// The longest frame: a data frame with a `Payload.bytesMax` payload.
    public static let bytesMax = headerBytes + 11 + Payload.bytesMax

    enum Kind: UInt8 {
        case hello = 1, heartbeat = 2, data = 3, link = 4
        case found = 5, scanState = 6, appHello = 7, scanRequest = 8, reload = 9, socket = 10, socketReturned = 11
        case configState = 12

        /// The version byte a frame of this kind carries (at least).
        var version: UInt8 {
            rawValue >= Kind.configState.rawValue ? BridgeFrame.version3 : rawValue >= Kind.found.rawValue ? BridgeFrame.version2 : BridgeFrame.version
        }
    }

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
        let kind: Kind
        switch message {
        case .hello: kind = .hello
        case .heartbeat: kind = .heartbeat
        case .data: kind = .data
        case .link: kind = .link
        case .found: kind = .found
        case .scanState: kind = .scanState
        case .notificationSocket: kind = .socket
        case .appHello: kind = .appHello
        case .scanRequest: kind = .scanRequest
        case .reload: kind = .reload
        case .socketReturned: kind = .socketReturned
        case .configState: kind = .configState
        }
        var version = kind.version
        if case .link(_, _, .unusable) = message { version = Self.version2 }
        out.append(version)
        out.append(kind.rawValue)
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
        case let .found(f):
            Self.appendSensor(f.identity, f.profileCode, to: &out)
            out.append(UInt8(bitPattern: f.rssi ?? Self.rssiUnknown))
            out.append(UInt8(f.name.count))
            for i in 0..<f.name.count { out.append(f.name[i]) }
        case let .scanState(running, radios, found):
            out.append(running ? 1 : 0); out.append(radios); out.appendLE(found)
        case let .notificationSocket(who, code), let .socketReturned(who, code):
            Self.appendSensor(who, code, to: &out)
        case let .appHello(v, flags):
            out.append(v); out.append(flags)
        case let .scanRequest(start, radios, seconds):
            out.append(start ? 1 : 0); out.append(radios); out.appendLE(seconds)
        case .reload:
            break
        case let .configState(readable, line, note):
            out.append(readable ? 1 : 0); out.appendLE(line)
            out.append(UInt8(note.count))
            for i in 0..<note.count { out.append(note[i]) }
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
        guard b[0] >= version && b[0] <= versionMax else { throw DecodeError(.badVersion, need: Int(versionMax), have: Int(b[0])) }
        guard let kind = Kind(rawValue: b[1]) else { throw DecodeError(.badFrameKind, have: Int(b[1])) }
        // Kinds of version 2 carry version byte 2, kind 12 byte 3: in a frame that says less
        // they are unknown.
        guard b[0] >= kind.version else { throw DecodeError(.badFrameKind, have: Int(b[1])) }
        func le(_ at: Int, _ n: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in (0..<n).reversed() { v = v << 8 | UInt64(b[at + i]) }
            return v
        }
        func exact(_ n: Int) throws(DecodeError) {
            guard b.count == n else { throw DecodeError(.malformedFrame, need: n, have: b.count) }
        }
        func sensor() throws(DecodeError) -> (SourceIdentity, UInt16) {
            guard b.count >= 20 else { throw DecodeError(.malformedFrame, need: 20, have: b.count) }
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
            return (who, UInt16(le(18, 2)))
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
            let (who, code) = try sensor()
            if kind == .link {
                try exact(21)
                guard let state = LinkState(rawValue: b[20]), state != .unusable || b[0] >= 2 else { throw DecodeError(.malformedFrame) }
                return BridgeFrame(bridgeTimeUs: time, .link(who, profileCode: code, state))
            }
            let n = Int(b[20])
            guard n <= Payload.bytesMax else { throw DecodeError(.malformedFrame, need: Payload.bytesMax, have: n) }
            try exact(21 + n)
            var p = Payload()
            for i in 0..<n { p.append(b[21 + i]) }
            return BridgeFrame(bridgeTimeUs: time, .data(who, profileCode: code, p))
        case .found:
            guard b.count >= 22 else { throw DecodeError(.malformedFrame, need: 22, have: b.count) }
            let (who, code) = try sensor()
            let n = Int(b[21])
            guard n <= SensorName.bytesMax else { throw DecodeError(.malformedFrame, need: SensorName.bytesMax, have: n) }
            try exact(22 + n)
            let rssi = Int8(bitPattern: b[20])
            return BridgeFrame(bridgeTimeUs: time, .found(FoundSensorFrame(who, profileCode: code, rssi: rssi == rssiUnknown ? nil : rssi,
                                                                          name: SensorName(bytes: b, from: 22, count: n))))
        case .scanState:
            try exact(14)
            guard b[10] <= 1 else { throw DecodeError(.malformedFrame) }
            return BridgeFrame(bridgeTimeUs: time, .scanState(running: b[10] == 1, radios: b[11], found: UInt16(le(12, 2))))
        case .socket, .socketReturned:
            try exact(20)
            let (who, code) = try sensor()
            return BridgeFrame(bridgeTimeUs: time, kind == .socket ? .notificationSocket(who, profileCode: code) : .socketReturned(who, profileCode: code))
        case .appHello:
            try exact(12)
            return BridgeFrame(bridgeTimeUs: time, .appHello(protocolVersionMax: b[10], flags: b[11]))
        case .scanRequest:
            try exact(14)
            guard b[10] <= 1 else { throw DecodeError(.malformedFrame) }
            return BridgeFrame(bridgeTimeUs: time, .scanRequest(start: b[10] == 1, radios: b[11], seconds: UInt16(le(12, 2))))
        case .reload:
            try exact(10)
            return BridgeFrame(bridgeTimeUs: time, .reload)
        case .configState:
            guard b.count >= 14 else { throw DecodeError(.malformedFrame, need: 14, have: b.count) }
            guard b[10] <= 1 else { throw DecodeError(.malformedFrame) }
            let n = Int(b[13])
            guard n <= BridgeNote.bytesMax else { throw DecodeError(.malformedFrame, need: BridgeNote.bytesMax, have: n) }
            try exact(14 + n)
            return BridgeFrame(bridgeTimeUs: time, .configState(readable: b[10] == 1, line: UInt16(le(11, 2)), BridgeNote(bytes: b, from: 14, count: n)))
        }
    }

    public static func parse(_ bytes: [UInt8]) throws(DecodeError) -> BridgeFrame {
        let r: Result<BridgeFrame, DecodeError> = bytes.withUnsafeBytes { b in
            do throws(DecodeError) { return .success(try parse(b)) } catch { return .failure(error) }
        }
        return try r.get()
    }
}
