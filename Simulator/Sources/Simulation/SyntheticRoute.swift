import Navigation
import Positioning
import RealModule

/// Where the synthetic ride goes: a closed loop of waypoints; the distance ridden gives the
/// position and the heading (the workout gives the speed, `SyntheticRide` the altitude).
public struct SyntheticRoute: Sendable {
    public struct Waypoint: Sendable, Hashable {
        public var latDeg: Double
        public var lonDeg: Double
        public init(_ latDeg: Double, _ lonDeg: Double) { self.latDeg = latDeg; self.lonDeg = lonDeg }
    }

    public let waypoints: [Waypoint]
    /// Distance from the first waypoint to each waypoint along the loop, m (the last entry closes
    /// the loop back to the first).
    let cumulativeM: [Double]
    public var lengthM: Double { cumulativeM.last ?? 0 }

    public init(waypoints: [Waypoint]) {
        precondition(waypoints.count >= 2, "a route needs two waypoints")
        self.waypoints = waypoints
        var total = 0.0
        var c = [0.0]
        for i in 0..<waypoints.count {
            let a = waypoints[i], b = waypoints[(i + 1) % waypoints.count]
            total += Geodesy.distanceM(latDeg: a.latDeg, lonDeg: a.lonDeg, latDeg: b.latDeg, lonDeg: b.lonDeg)
            c.append(total)
        }
        cumulativeM = c
    }

    /// A 28 km loop of country roads: an irregular ring of 16 waypoints, 2.7–5.3 km from a town
    /// centre at 47.05° N 8.31° E.
    public static let demo: SyntheticRoute = {
        let centre = (lat: 47.05, lon: 8.31)
        let (m, n) = Geodesy.radii(latDeg: centre.lat)
        var points: [Waypoint] = []
        let count = 16
        for k in 0..<count {
            let angle = Double(k) / Double(count) * 2 * Double.pi
            let radiusM = 4_000 + 900 * Double.sin(3 * angle) + 400 * Double.cos(5 * angle)
            let north = radiusM * Double.cos(angle), east = radiusM * Double.sin(angle)
            points.append(Waypoint(centre.lat + north / (m * Geodesy.radiansPerDegree),
                                   centre.lon + east / (n * Geodesy.radiansPerDegree * Double.cos(centre.lat * Geodesy.radiansPerDegree))))
        }
        return SyntheticRoute(waypoints: points)
    }()

    /// Position and heading (degrees from north) after `distanceM` along the loop (laps repeat).
    public func position(atDistanceM distanceM: Double) -> (latDeg: Double, lonDeg: Double, trackDeg: Double) {
        var d = distanceM.truncatingRemainder(dividingBy: lengthM)
        if d < 0 { d += lengthM }
        var i = 0
        while i + 1 < cumulativeM.count - 1, cumulativeM[i + 1] <= d { i += 1 }
        let a = waypoints[i], b = waypoints[(i + 1) % waypoints.count]
        let legM = cumulativeM[i + 1] - cumulativeM[i]
        let f = legM > 0 ? (d - cumulativeM[i]) / legM : 0
        let lat = a.latDeg + (b.latDeg - a.latDeg) * f
        let lon = a.lonDeg + (b.lonDeg - a.lonDeg) * f
        let (north, east) = Geodesy.offsetM(fromLatDeg: a.latDeg, lonDeg: a.lonDeg, toLatDeg: b.latDeg, lonDeg: b.lonDeg)
        var track = Double.atan2(y: east, x: north) / Geodesy.radiansPerDegree
        if track < 0 { track += 360 }
        return (lat, lon, track)
    }
}

extension SyntheticRoute {
    /// A course's points as the route (the simulated GPS follows a course: `bikesim --course`).
    public init(course: Course) {
        var points: [Waypoint] = []
        points.reserveCapacity(course.pointCount)
        for i in 0..<course.pointCount { points.append(Waypoint(course.latDeg[i], course.lonDeg[i])) }
        self.init(waypoints: points)
    }
}
