import RealModule

/// The track so far, for the "where am I" page: positions projected onto a local flat plane
/// (metres east and north of the first point), at most `pointsMax` of them. When it is full,
/// every other point is dropped and the spacing between kept points doubles, so a ride of any
/// length fits in fixed memory and the whole track stays drawable. The latest position is
/// always kept apart (it is where the rider is).
///
/// The points are stored inline (no heap): the breadcrumb lives in the screen value, which is
/// copied and compared without allocating.
public struct Breadcrumb: Sendable, Hashable {
    public static let pointsMax = 256
    /// Spacing between kept points at the start, m (doubles at every thinning).
    public static let initialSpacingM = 5.0
    /// Positions further apart in time than this are not joined (the fix was lost between them).
    public static let breakAfterMs: Int64 = 3_000

    public private(set) var originLatDeg: Double?
    public private(set) var originLonDeg: Double?
    /// Metres per degree at the origin (north, east).
    var metresPerDegree = (north: 0.0, east: 0.0)
    var eastM = InlineArray<256, Float>(repeating: 0)
    var northM = InlineArray<256, Float>(repeating: 0)
    public private(set) var count = 0
    public private(set) var spacingM = Breadcrumb.initialSpacingM
    /// The latest position (may be closer than `spacingM` to the last kept point).
    public private(set) var current: (eastM: Double, northM: Double)?
    /// A break before the next point (the fix was lost): not joined to the previous one.
    var breakBefore = InlineArray<256, Bool>(repeating: false)
    var pendingBreak = false
    /// When the latest position was taken (ms on the caller's clock).
    var lastAtMs: Int64?

    public init() {}

    public static func == (a: Breadcrumb, b: Breadcrumb) -> Bool {
        guard a.count == b.count, a.spacingM == b.spacingM, a.originLatDeg == b.originLatDeg,
              a.originLonDeg == b.originLonDeg, a.current?.eastM == b.current?.eastM,
              a.current?.northM == b.current?.northM, a.pendingBreak == b.pendingBreak else { return false }
        for i in 0..<a.count where a.eastM[i] != b.eastM[i] || a.northM[i] != b.northM[i] || a.breakBefore[i] != b.breakBefore[i] {
            return false
        }
        return true
    }

    public func hash(into h: inout Hasher) {
        h.combine(count)
        h.combine(current?.eastM)
        h.combine(current?.northM)
        if count > 0 { h.combine(eastM[count - 1]); h.combine(northM[count - 1]) }
    }

    public var isEmpty: Bool { current == nil }

    /// Kept point `i` (oldest first), m east and north of the origin, and whether it starts a new
    /// piece of track.
    public func point(_ i: Int) -> (eastM: Double, northM: Double, startsPiece: Bool) {
        precondition(i >= 0 && i < count)
        return (Double(eastM[i]), Double(northM[i]), breakBefore[i])
    }

    /// The fix was lost: the next position is not joined to the last.
    public mutating func breakTrack() { pendingBreak = true }

    /// Adds a position taken at `atMs`; one more than `breakAfterMs` after the previous starts a
    /// new piece of track.
    public mutating func add(latDeg: Double, lonDeg: Double, atMs: Int64) {
        guard latDeg.isFinite, lonDeg.isFinite else { return }
        if let last = lastAtMs, atMs - last > Self.breakAfterMs { pendingBreak = true }
        lastAtMs = atMs
        add(latDeg: latDeg, lonDeg: lonDeg)
    }

    public mutating func add(latDeg: Double, lonDeg: Double) {
        guard latDeg.isFinite, lonDeg.isFinite else { return }
        if originLatDeg == nil {
            originLatDeg = latDeg
            originLonDeg = lonDeg
            let (m, n) = Geodesy.radii(latDeg: latDeg)
            metresPerDegree = (m * Geodesy.radiansPerDegree, n * Geodesy.radiansPerDegree * Double.cos(latDeg * Geodesy.radiansPerDegree))
        }
        var dLon = lonDeg - originLonDeg!
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let e = dLon * metresPerDegree.east
        let n = (latDeg - originLatDeg!) * metresPerDegree.north
        current = (e, n)
        if count > 0, !pendingBreak {
            let de = e - Double(eastM[count - 1]), dn = n - Double(northM[count - 1])
            guard de * de + dn * dn >= spacingM * spacingM else { return }
        }
        if count == Self.pointsMax { thin() }
        eastM[count] = Float(e)
        northM[count] = Float(n)
        breakBefore[count] = pendingBreak && count > 0
        pendingBreak = false
        count += 1
    }

    /// Keeps every other point, doubles the spacing. A break at a dropped point moves to the next
    /// kept one, so pieces stay apart.
    mutating func thin() {
        var kept = 0
        var carriedBreak = false
        for i in 0..<count {
            if i % 2 == 1 {
                carriedBreak = carriedBreak || breakBefore[i]
                continue
            }
            eastM[kept] = eastM[i]
            northM[kept] = northM[i]
            breakBefore[kept] = (breakBefore[i] || carriedBreak) && kept > 0
            carriedBreak = false
            kept += 1
        }
        count = kept
        spacingM *= 2
    }

    /// The box around every kept point and the current position, m.
    public var bounds: (minEastM: Double, maxEastM: Double, minNorthM: Double, maxNorthM: Double)? {
        guard let c = current else { return nil }
        var b = (c.eastM, c.eastM, c.northM, c.northM)
        for i in 0..<count {
            let e = Double(eastM[i]), n = Double(northM[i])
            b.0 = min(b.0, e); b.1 = max(b.1, e); b.2 = min(b.2, n); b.3 = max(b.3, n)
        }
        return b
    }
}
