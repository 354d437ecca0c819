import RealModule

/// Distances on the WGS 84 ellipsoid for the short steps between consecutive fixes (a second
/// apart: metres to tens of metres), and a local flat projection for drawing a track.
public enum Geodesy {
    /// WGS 84 semi-major axis, m, and first eccentricity squared.
    public static let semiMajorAxisM = 6_378_137.0
    public static let eccentricitySquared = 6.694_379_990_14e-3
    public static let radiansPerDegree = Double.pi / 180

    /// Radii of curvature at latitude `latDeg`: meridional (north–south, M) and prime vertical
    /// (east–west, N), m.
    public static func radii(latDeg: Double) -> (meridionalM: Double, primeVerticalM: Double) {
        let s = Double.sin(latDeg * radiansPerDegree)
        let w = 1 - eccentricitySquared * s * s
        let n = semiMajorAxisM / w.squareRoot()
        return (n * (1 - eccentricitySquared) / w, n)
    }

    /// Distance between two nearby points, m: the local ellipsoidal plane at their mid-latitude.
    /// Within 1 mm of the geodesic for steps under 1 km (the rule rejects longer jumps anyway);
    /// longer steps get the same approximation, good to 0.1 % up to 100 km.
    public static func distanceM(latDeg lat1: Double, lonDeg lon1: Double, latDeg lat2: Double, lonDeg lon2: Double) -> Double {
        let (north, east) = offsetM(fromLatDeg: lat1, lonDeg: lon1, toLatDeg: lat2, lonDeg: lon2)
        return (north * north + east * east).squareRoot()
    }

    /// North and east offsets of point 2 from point 1, m (local plane at the mid-latitude).
    public static func offsetM(fromLatDeg lat1: Double, lonDeg lon1: Double, toLatDeg lat2: Double, lonDeg lon2: Double) -> (northM: Double, eastM: Double) {
        let mid = (lat1 + lat2) / 2
        let (m, n) = radii(latDeg: mid)
        var dLon = lon2 - lon1
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let north = (lat2 - lat1) * radiansPerDegree * m
        let east = dLon * radiansPerDegree * n * Double.cos(mid * radiansPerDegree)
        return (north, east)
    }
}
