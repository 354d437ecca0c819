import Navigation
import TestSupport

/// Courses and rides drawn in metres around an origin, for the follower's tests.
enum Drawn {
    static let origin = LocalPlane(latDeg: 46.5, lonDeg: 7.5)

    static func latLon(_ east: Double, _ north: Double) -> (Double, Double) {
        let p = origin.point(east: east, north: north)
        return (p.latDeg, p.lonDeg)
    }

    /// A course through the given points (m east, north), a point every `spacing` m along
    /// straight lines between them, altitudes from `altitude(along)` if given.
    static func course(_ corners: [(Double, Double)], spacing: Double = 20, name: String = "drawn",
                       cues: [Cue] = [], climbs: [Climb] = [], altitude: ((Double) -> Double)? = nil) throws -> Course {
        var lat: [Int32] = [], lon: [Int32] = [], alt: [Float] = []
        var along = 0.0
        func add(_ e: Double, _ n: Double) {
            let (la, lo) = latLon(e, n)
            let q = (Course.quantised(la)!, Course.quantised(lo)!)
            if lat.last == q.0 && lon.last == q.1 { return }
            lat.append(q.0); lon.append(q.1)
            alt.append(altitude.map { Float($0(along)) } ?? .nan)
        }
        add(corners[0].0, corners[0].1)
        for k in 1..<corners.count {
            let (e0, n0) = corners[k - 1], (e1, n1) = corners[k]
            let length = ((e1 - e0) * (e1 - e0) + (n1 - n0) * (n1 - n0)).squareRoot()
            let steps = max(1, Int((length / spacing).rounded(.up)))
            for s in 1...steps {
                let t = Double(s) / Double(steps)
                along += length / Double(steps)
                add(e0 + t * (e1 - e0), n0 + t * (n1 - n0))
            }
        }
        return try Course(name: name, latE7: lat, lonE7: lon, altitudeM: alt, cues: cues, climbs: climbs)
    }

    /// One lap of a 600 m wide circuit from its south-west corner (m): east, north to `top`, west,
    /// south, all `dn` north of the circuit (recorded laps differ by a few metres).
    static func circuitLap(_ dn: Double, _ top: Double) -> [(Double, Double)] {
        [(600, dn), (600, top + dn), (0, top + dn), (0, dn)]
    }

    /// The detour ridden beside a straight 4 km course north from the origin (m): 1 km on course,
    /// 400 m out at a right angle, 600 m parallel, back, on to the end.
    static let straightDetour: [(Double, Double)] = [(0, 0), (0, 1_000), (400, 1_000), (400, 1_600), (0, 1_600), (0, 4_000)]

    /// The 600 × 400 m circuit ridden three times from its south-west corner.
    static let threeCircuits: [(Double, Double)] = [(0, 0)] + circuitLap(0, 400) + circuitLap(0, 400) + circuitLap(0, 400)

    /// Positions every `speed` m (one a second) along a path of corners (m), with Gaussian-ish
    /// noise of `noise` m.
    static func ride(_ corners: [(Double, Double)], speed: Double = 8, noise: Double = 0, seed: UInt64 = 1,
                     startMs: Int64 = 0) -> [NavigationFix] {
        var rng = SeededRandom(seed: seed)
        var out: [NavigationFix] = []
        var t = startMs
        var carry = 0.0
        for k in 1..<corners.count {
            let (e0, n0) = corners[k - 1], (e1, n1) = corners[k]
            let length = ((e1 - e0) * (e1 - e0) + (n1 - n0) * (n1 - n0)).squareRoot()
            var d = carry
            while d < length {
                let f = d / length
                let ne = rng.double(-1...1) + rng.double(-1...1) + rng.double(-1...1)
                let nn = rng.double(-1...1) + rng.double(-1...1) + rng.double(-1...1)
                let (la, lo) = latLon(e0 + f * (e1 - e0) + noise * ne / 1.7, n0 + f * (n1 - n0) + noise * nn / 1.7)
                out.append(NavigationFix(latDeg: la, lonDeg: lo, atMs: t, speedMps: speed))
                t += 1000
                d += speed
            }
            carry = d - length
        }
        return out
    }
}

/// Runs fixes through a follower and keeps what happened.
struct FollowLog {
    var follower: CourseFollower
    var events: [(atMs: Int64, events: NavigationEvents)] = []
    var alongs: [(atMs: Int64, along: Double?)] = []

    init(_ course: Course, settings: FollowerSettings = FollowerSettings()) {
        follower = CourseFollower(course: course, settings: settings)
    }

    mutating func ride(_ fixes: [NavigationFix]) {
        for f in fixes { take(f) }
    }

    /// Of `fixes`, only those `kept` says the source gave; at the others the record has no fix
    /// (`noFix`, then `afterNoFix`). Returns the fixes given.
    mutating func ride(_ fixes: [NavigationFix], keeping kept: (NavigationFix) -> Bool,
                       afterNoFix: (CourseFollower, Int64) -> Void = { _, _ in }) -> [NavigationFix] {
        var given: [NavigationFix] = []
        for f in fixes {
            guard kept(f) else {
                follower.noFix(at: f.atMs)
                afterNoFix(follower, f.atMs)
                continue
            }
            given.append(f)
            take(f)
        }
        return given
    }

    mutating func take(_ f: NavigationFix) {
        let e = follower.update(f)
        if !e.isEmpty { events.append((f.atMs, e)) }
        alongs.append((f.atMs, follower.alongM))
    }

    var alarms: [Int64] { events.filter { $0.events.offCourse || $0.events.wrongWay }.map(\.atMs) }
    var offCourseAlarms: [Int64] { events.filter { $0.events.offCourse }.map(\.atMs) }
    var wrongWayAlarms: [Int64] { events.filter { $0.events.wrongWay }.map(\.atMs) }
    var periods: [OffCoursePeriod] { events.compactMap { $0.events.backOnCourse } }
    var cues: [CueAnnouncement] { events.compactMap { $0.events.cue } }
}
