// Following a course (docs/navigation.md, docs/performance.md "Navigation"): importing a 300 km
// course of 50 000 points (GPX text → prepared course → compact file → decoded), and the
// follower's cost per fix on it, with its heap allocations (0 in steady state).
import CourseImport
import Glibc
import Navigation
import RealModule
import RideFiles
import Simulation

/// A 300 km ride as a GPX track of `points` points with elevations (a random walk over rolling
/// country with some climbs), as a planner or a recording would give it.
func syntheticCourseGPX(points: Int, lengthM: Double, seed: UInt64 = 7) -> (gpx: [UInt8], lat: [Double], lon: [Double]) {
    var rng = seed
    func next() -> Double { rng = rng &* 6364136223846793005 &+ 1442695040888963407; return Double(rng >> 11) / Double(1 << 53) }
    let step = lengthM / Double(points - 1)
    let plane = LocalPlane(latDeg: 45.9, lonDeg: 6.1)
    var e = 0.0, n = 0.0, heading = 0.4, alt = 450.0
    var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"bikebench\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n"
    out += "<trk><name>Bench 300</name><trkseg>\n"
    var lat: [Double] = [], lon: [Double] = []
    lat.reserveCapacity(points); lon.reserveCapacity(points)
    for k in 0..<points {
        heading += (next() - 0.5) * 0.12 + 0.02 * Double.sin(Double(k) / 900)
        e += step * Double.sin(heading)
        n += step * Double.cos(heading)
        alt += step * (0.05 * Double.sin(Double(k) / 700) + 0.02 * Double.sin(Double(k) / 97)) + (next() - 0.5) * 0.4
        let p = plane.point(east: e, north: n)
        lat.append(p.latDeg); lon.append(p.lonDeg)
        out += "<trkpt lat=\"\(decimalText(p.latDeg, decimals: 7))\" lon=\"\(decimalText(p.lonDeg, decimals: 7))\"><ele>\(decimalText(alt, decimals: 1))</ele></trkpt>\n"
    }
    out += "</trkseg></trk>\n</gpx>\n"
    return (Array(out.utf8), lat, lon)
}

struct NavigationBenchResult {
    var gpxBytes = 0
    var importMs: [Double] = []
    var importAllocations: UInt64 = 0
    var importAllocatedBytes: UInt64 = 0
    var peakRSSGrowthKB = 0
    var pointsKept = 0
    var cues = 0
    var climbs = 0
    var fileBytes = 0
    var decodeMs: [Double] = []
    var fixNs: [Int64] = []
    var fixAllocations: UInt64 = 0
    var fixesThatAllocated = 0
    var searchNs: [Int64] = []
    var alarms = 0
    var lengthM = 0.0
    var distanceToGoM = 0.0
}

/// Peak resident set so far, kB (getrusage).
func peakRSSKB() -> Int {
    var u = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
    return u.ru_maxrss
}

func runNavigationBench(quick: Bool) -> NavigationBenchResult {
    var r = NavigationBenchResult()
    let lengthM = 300_000.0
    let (gpx, lat, lon) = syntheticCourseGPX(points: 50_000, lengthM: lengthM)
    r.gpxBytes = gpx.count
    var course: Course?
    let rss0 = peakRSSKB()
    for run in 0..<(quick ? 1 : 3) {
        let a0 = Allocations.count, b0 = Allocations.bytes
        let t0 = Clock.ns()
        do { course = try CourseImport.course(from: gpx, fileName: "bench-300km.gpx").course } catch {
            preconditionFailure("the bench course imports: \(error)")
        }
        r.importMs.append(Double(Clock.ns() - t0) / 1e6)
        if run == 0 {
            r.importAllocations = Allocations.count - a0
            r.importAllocatedBytes = Allocations.bytes - b0
            r.peakRSSGrowthKB = peakRSSKB() - rss0
        }
    }
    let c = course!
    r.pointsKept = c.pointCount
    r.cues = c.cues.count
    r.climbs = c.climbs.count
    r.lengthM = c.lengthM
    let file = CourseCodec.encode(c)
    r.fileBytes = file.count
    for _ in 0..<5 {
        let t0 = Clock.ns()
        do { course = try CourseCodec.decode(file) } catch { preconditionFailure("the bench course decodes: \(error)") }
        r.decodeMs.append(Double(Clock.ns() - t0) / 1e6)
    }
    // Ridden along the GPX's own points at 9 m/s with ±4 m of noise, a fix a second.
    var follower = CourseFollower(course: course!)
    var rng: UInt64 = 99
    func noise() -> Double { rng = rng &* 6364136223846793005 &+ 1442695040888963407; return (Double(rng >> 11) / Double(1 << 53) - 0.5) * 8 }
    let metresPerDeg = 111_200.0
    var along = 0.0
    var i = 0
    var t: Int64 = 0
    let stepM = lengthM / Double(lat.count - 1)
    let fixes = Int(lengthM / 9)
    r.fixNs.reserveCapacity(fixes)
    for k in 0..<fixes {
        along = Double(k) * 9
        i = min(lat.count - 2, Int(along / stepM))
        let f = along / stepM - Double(i)
        let la = lat[i] + f * (lat[i + 1] - lat[i]) + noise() / metresPerDeg
        let lo = lon[i] + f * (lon[i + 1] - lon[i]) + noise() / (metresPerDeg * 0.7)
        let fix = NavigationFix(latDeg: la, lonDeg: lo, atMs: t, speedMps: 9)
        t += 1_000
        let a0 = Allocations.count
        let t0 = Clock.ns()
        let e = follower.update(fix)
        let t1 = Clock.ns()
        let a1 = Allocations.count
        if e.offCourse || e.wrongWay { r.alarms += 1 }
        guard k >= 100 else { continue } // steady state: after the first lock
        r.fixNs.append(t1 - t0)
        if a1 != a0 { r.fixAllocations += a1 - a0; r.fixesThatAllocated += 1 }
    }
    r.distanceToGoM = follower.view.distanceToGoM ?? -1
    // The whole-course search (before the first lock, off course): a fix 5 km from the course.
    for k in 0..<(quick ? 20 : 100) {
        var f = CourseFollower(course: course!)
        let t0 = Clock.ns()
        _ = f.update(NavigationFix(latDeg: lat[k * 400] + 0.05, lonDeg: lon[k * 400], atMs: 0, speedMps: 9))
        r.searchNs.append(Clock.ns() - t0)
    }
    return r
}

/// The simulator's demo loop (the GPS of the frame path rides it) as a course, a point every
/// 50 m: `bikebench --guard --gps --course` follows it.
func demoLoopCourse() -> Course {
    let route = SyntheticRoute.demo
    var lat: [Int32] = [], lon: [Int32] = []
    var d = 0.0
    while d < route.lengthM {
        let p = route.position(atDistanceM: d)
        let q = (Course.quantised(p.latDeg)!, Course.quantised(p.lonDeg)!)
        if lat.last != q.0 || lon.last != q.1 { lat.append(q.0); lon.append(q.1) }
        d += 50
    }
    do {
        return try Course(name: "demo loop", latE7: lat, lonE7: lon, altitudeM: Array(repeating: .nan, count: lat.count),
                          cues: CoursePreparation.bendCues(try Course(name: "demo loop", latE7: lat, lonE7: lon,
                                                                      altitudeM: Array(repeating: .nan, count: lat.count), cues: [], climbs: [])),
                          climbs: [])
    } catch {
        preconditionFailure("the demo loop is a course: \(error)")
    }
}
