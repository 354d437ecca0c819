/// A minimal FIT writer for tests, independent of the code under test (its own CRC): little-
/// endian definitions of unsigned fields, data messages, the 14-byte header and the file CRC.
/// Enough to write the shapes real units' files have (timer events, records, laps, sessions).
public struct FITBytes {
    public enum Field { case u8(UInt8), u16(UInt8), u32(UInt8) }

    public var data: [UInt8] = []
    var defined: [UInt8: [Field]] = [:]

    public init() {}

    /// Defines local message `local` as global message `global` with `fields`;
    /// `architecture` 0 (little-endian) unless a test writes a damaged one.
    public mutating func define(_ local: UInt8, global: UInt16, _ fields: [Field], architecture: UInt8 = 0) {
        data += [0x40 | local, 0, architecture, UInt8(global & 0xFF), UInt8(global >> 8), UInt8(fields.count)]
        for f in fields {
            switch f {
            case .u8(let n): data += [n, 1, 0x02]
            case .u16(let n): data += [n, 2, 0x84]
            case .u32(let n): data += [n, 4, 0x86]
            }
        }
        defined[local] = fields
    }

    /// A data message of local type `local`; nil values are written as the field's invalid value.
    public mutating func message(_ local: UInt8, _ values: [UInt64?]) {
        let fields = defined[local]!
        precondition(fields.count == values.count)
        data.append(local)
        for (f, v) in zip(fields, values) {
            switch f {
            case .u8: data.append(UInt8(truncatingIfNeeded: v ?? 0xFF))
            case .u16: let x = UInt16(truncatingIfNeeded: v ?? 0xFFFF); data += [UInt8(x & 0xFF), UInt8(x >> 8)]
            case .u32:
                let x = UInt32(truncatingIfNeeded: v ?? 0xFFFF_FFFF)
                data += [UInt8(x & 0xFF), UInt8((x >> 8) & 0xFF), UInt8((x >> 16) & 0xFF), UInt8(x >> 24)]
            }
        }
    }

    public static func crc(_ bytes: some Sequence<UInt8>, _ start: UInt16 = 0) -> UInt16 {
        let table: [UInt16] = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
                               0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]
        var crc = start
        for b in bytes {
            var t = table[Int(crc & 0xF)]
            crc = (crc >> 4) & 0x0FFF
            crc ^= t ^ table[Int(b & 0xF)]
            t = table[Int(crc & 0xF)]
            crc = (crc >> 4) & 0x0FFF
            crc ^= t ^ table[Int((b >> 4) & 0xF)]
        }
        return crc
    }

    /// The whole file: header (with its CRC), the messages, the file CRC.
    public func file() -> [UInt8] {
        let n = UInt32(data.count)
        var h: [UInt8] = [14, 0x20, 0x54, 0x08, UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
        h += Array(".FIT".utf8)
        let hc = Self.crc(h)
        h += [UInt8(hc & 0xFF), UInt8(hc >> 8)]
        let body = h + data
        let c = Self.crc(body)
        return body + [UInt8(c & 0xFF), UInt8(c >> 8)]
    }

    // MARK: the messages of an activity

    /// FIT seconds of 2021-09-08, a base for test rides.
    public static let base: UInt64 = 1_000_000_000

    /// Local types used by `activity`: 0 event, 1 record, 2 lap, 3 session, 4 activity.
    public mutating func defineActivity() {
        define(0, global: 21, [.u32(253), .u8(0), .u8(1), .u32(3)])              // event: timestamp, event, type, data
        define(1, global: 20, [.u32(253), .u8(3), .u16(6), .u32(5)])             // record: hr, speed mm/s, distance cm
        define(2, global: 19, [.u32(253), .u32(2), .u32(7), .u32(8), .u32(9)])   // lap: start, elapsed, timer (ms), distance (cm)
        define(3, global: 18, [.u32(253), .u32(2), .u32(7), .u32(8), .u32(9)])   // session: the same fields
        define(4, global: 34, [.u32(253), .u32(0)])                               // activity: timestamp, total timer
    }

    /// A timer event at `t` (FIT seconds): start (type 0) or stop_all (4); `auto` as its data.
    public mutating func timer(_ t: UInt64, start: Bool, auto: Bool = false) {
        message(0, [t, 0, start ? 0 : 4, auto ? 1 : 0])
    }

    /// A record at `t` with heart rate, speed (m/s) and distance (m).
    public mutating func record(_ t: UInt64, hr: UInt64 = 120, speedMps: Double = 5, distanceM: Double) {
        message(1, [t, hr, UInt64((speedMps * 1000).rounded()), UInt64((distanceM * 100).rounded())])
    }

    public mutating func summary(lap: Bool, end: UInt64, start: UInt64, elapsedS: Double, timerS: Double, distanceM: Double) {
        message(lap ? 2 : 3, [end, start, UInt64((elapsedS * 1000).rounded()), UInt64((timerS * 1000).rounded()),
                              UInt64((distanceM * 100).rounded())])
    }
}
