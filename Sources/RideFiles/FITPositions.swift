import RideModel

// Where a ride went and how much it climbed, in the FIT file (docs/gps.md, "In the files"):
// records carry enhanced_speed and enhanced_altitude beside the legacy 16-bit fields, and grade;
// laps and the session carry start and end positions, the bounding box (session) and total
// ascent and descent.

extension FITWriter {
    /// uint32 with scale and offset (enhanced_altitude: scale 5, offset 500).
    public mutating func u32(_ v: Double?, scale: Double, offset: Double) {
        if let r = Self.rounded(v, scale: scale, offset: offset, max: 4_294_967_294) { u32(UInt32(r)) } else { u32(0xFFFF_FFFF) }
    }

    /// sint16 with a scale (grade: scale 100).
    public mutating func s16(_ v: Double?, scale: Double = 1) {
        if let r = Self.rounded(v, scale: scale, offset: 0, max: 32_766, min: -32_767) {
            u16(UInt16(bitPattern: Int16(r)))
        } else {
            u16(0x7FFF)
        }
    }
}

extension RideExport {
    /// The first and last positions among rows whose file time (whole FIT seconds, as every
    /// reader of the file sees them) lies in the file times of `from...to`, and the box around
    /// all of them (north-east and south-west corners), degrees.
    public func positions(from: MonotonicInstant, to: MonotonicInstant) -> PositionSpan? {
        var span: PositionSpan?
        let first = fitTime(from), last = fitTime(to)
        for r in 0..<rowCount {
            let t = fitTime(rowInstant(r))
            guard t >= first, t <= last, let lat = value(r, .latitude), let lon = value(r, .longitude) else { continue }
            if span == nil {
                span = PositionSpan(startLatDeg: lat, startLonDeg: lon, endLatDeg: lat, endLonDeg: lon,
                                    northDeg: lat, eastDeg: lon, southDeg: lat, westDeg: lon)
            } else {
                span!.endLatDeg = lat; span!.endLonDeg = lon
                span!.northDeg = max(span!.northDeg, lat); span!.southDeg = min(span!.southDeg, lat)
                span!.eastDeg = max(span!.eastDeg, lon); span!.westDeg = min(span!.westDeg, lon)
            }
        }
        return span
    }
}

public struct PositionSpan: Sendable, Hashable {
    public var startLatDeg: Double, startLonDeg: Double
    public var endLatDeg: Double, endLonDeg: Double
    public var northDeg: Double, eastDeg: Double, southDeg: Double, westDeg: Double
}

extension FITEncoder {
    /// Lap fields after the zone arrays: start/end position, total ascent/descent.
    static let lapPositionFields = [
        FITFieldDefinition(3, .sint32), FITFieldDefinition(4, .sint32), FITFieldDefinition(5, .sint32),
        FITFieldDefinition(6, .sint32), FITFieldDefinition(21, .uint16), FITFieldDefinition(22, .uint16),
    ]

    /// Session fields after the zone arrays: start/end position, the bounding box, total
    /// ascent/descent.
    static let sessionPositionFields = [
        FITFieldDefinition(3, .sint32), FITFieldDefinition(4, .sint32), FITFieldDefinition(38, .sint32),
        FITFieldDefinition(39, .sint32), FITFieldDefinition(29, .sint32), FITFieldDefinition(30, .sint32),
        FITFieldDefinition(31, .sint32), FITFieldDefinition(32, .sint32),
        FITFieldDefinition(22, .uint16), FITFieldDefinition(23, .uint16),
    ]

    static func writeLapPositions(_ w: inout FITWriter, _ ride: RideExport, _ lap: Lap, end: MonotonicInstant) {
        let span = ride.positions(from: lap.startInstant, to: end)
        w.s32(semicircles(span?.startLatDeg)); w.s32(semicircles(span?.startLonDeg))
        w.s32(semicircles(span?.endLatDeg)); w.s32(semicircles(span?.endLonDeg))
        writeClimb(&w, lap.statistics)
    }

    static func writeSessionPositions(_ w: inout FITWriter, _ ride: RideExport, _ stats: StatisticsSet) {
        let span = ride.positions(from: ride.startInstant, to: ride.stopInstant)
        w.s32(semicircles(span?.startLatDeg)); w.s32(semicircles(span?.startLonDeg))
        w.s32(semicircles(span?.endLatDeg)); w.s32(semicircles(span?.endLonDeg))
        w.s32(semicircles(span?.northDeg)); w.s32(semicircles(span?.eastDeg))
        w.s32(semicircles(span?.southDeg)); w.s32(semicircles(span?.westDeg))
        writeClimb(&w, stats)
    }

    /// total_ascent and total_descent, whole metres (invalid when the ride has no altitude).
    static func writeClimb(_ w: inout FITWriter, _ s: StatisticsSet) {
        w.u16(s[.ascent].hasData ? s.totals[Quantity.ascent.index] : nil)
        w.u16(s[.descent].hasData ? s.totals[Quantity.descent.index] : nil)
    }
}
