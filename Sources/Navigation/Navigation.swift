// Navigation: following a course — the course as the ride holds it (`Course`: a decimated
// polyline with cumulative distance, altitude and ascent per point, cues and climbs), its compact
// binary form on the card (`CourseCodec`, checked by a CRC-32 and every invariant before use),
// and the follower (`CourseFollower`): each fix projected onto the course inside a window along
// it, jumps to another part only on sustained evidence, off-course and wrong-way alarms, turn cues
// and climbs ahead, distance and time to go. Pure: positions and instants come in as values; no
// files, no clock, no allocation per fix. docs/navigation.md.
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
import Positioning
import RealModule

/// The flat geometry the follower works in: a local plane around one fix, with cos-latitude
/// scaling (Geodesy's radii of curvature at the fix's latitude), and bearings.
public struct LocalPlane: Sendable {
    public let latDeg: Double
    public let lonDeg: Double
    /// Metres per degree of latitude (north) and of longitude (east) at `latDeg`.
    public let northPerDeg: Double
    public let eastPerDeg: Double

    public init(latDeg: Double, lonDeg: Double) {
        self.latDeg = latDeg
        self.lonDeg = lonDeg
        let (m, n) = Geodesy.radii(latDeg: latDeg)
        northPerDeg = m * Geodesy.radiansPerDegree
        eastPerDeg = n * Geodesy.radiansPerDegree * Double.cos(latDeg * Geodesy.radiansPerDegree)
    }

    /// A point's offset from the plane's origin, m (east, north).
    @inline(__always)
    public func offset(latDeg lat: Double, lonDeg lon: Double) -> (east: Double, north: Double) {
        var dLon = lon - lonDeg
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        return (dLon * eastPerDeg, (lat - latDeg) * northPerDeg)
    }

    /// The point at an offset from the origin (the inverse of `offset`).
    public func point(east: Double, north: Double) -> (latDeg: Double, lonDeg: Double) {
        var lon = lonDeg + east / eastPerDeg
        if lon >= 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return (latDeg + north / northPerDeg, lon)
    }
}

public enum Bearing {
    /// Compass bearing of an offset (0 = north, 90 = east), degrees in [0, 360).
    @inline(__always)
    public static func of(east: Double, north: Double) -> Double {
        var b = Double.atan2(y: east, x: north) / Geodesy.radiansPerDegree
        if b < 0 { b += 360 }
        if b >= 360 { b -= 360 }
        return b
    }

    /// The signed turn from `from` to `to`, degrees in (-180, 180]: positive to the right.
    @inline(__always)
    public static func turn(from: Double, to: Double) -> Double {
        var d = (to - from).truncatingRemainder(dividingBy: 360)
        if d > 180 { d -= 360 } else if d <= -180 { d += 360 }
        return d
    }
}

/// CRC-32 as zlib and PNG compute it (reflected polynomial 0xEDB88320), four bits at a time: the
/// course file's checksum, which Python's `zlib.crc32` recomputes in the oracle tests.
public enum CRC32 {
    static let nibbles: [UInt32] = [
        0x0000_0000, 0x1DB7_1064, 0x3B6E_20C8, 0x26D9_30AC, 0x76DC_4190, 0x6B6B_51F4, 0x4DB2_6158, 0x5005_713C,
        0xEDB8_8320, 0xF00F_9344, 0xD6D6_A3E8, 0xCB61_B38C, 0x9B64_C2B0, 0x86D3_D2D4, 0xA00A_E278, 0xBDBD_F21C,
    ]

    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        nibbles.withUnsafeBufferPointer { t in
            for b in bytes {
                c ^= UInt32(b)
                c = (c >> 4) ^ t[Int(c & 0xF)]
                c = (c >> 4) ^ t[Int(c & 0xF)]
            }
        }
        return ~c
    }

    public static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 { bytes.withUnsafeBytes { checksum($0) } }
}
