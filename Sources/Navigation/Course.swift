import Positioning

/// A cue on the course: where it is (distance along the course, m), what it says, and its name
/// and notes as the course file had them.
public struct Cue: Sendable, Hashable {
    public var alongM: Double
    public var type: CueType
    public var name: String
    public var notes: String

    public init(alongM: Double, type: CueType, name: String = "", notes: String = "") {
        self.alongM = alongM
        self.type = type
        self.name = name
        self.notes = notes
    }
}

/// A climb found on the course at import (docs/navigation.md, "Climbs"): from its foot to its
/// top, m along the course, with the altitudes there.
public struct Climb: Sendable, Hashable {
    public var startAlongM: Double
    public var endAlongM: Double
    public var startAltitudeM: Double
    public var endAltitudeM: Double

    public init(startAlongM: Double, endAlongM: Double, startAltitudeM: Double, endAltitudeM: Double) {
        self.startAlongM = startAlongM
        self.endAlongM = endAlongM
        self.startAltitudeM = startAltitudeM
        self.endAltitudeM = endAltitudeM
    }

    public var lengthM: Double { endAlongM - startAlongM }
    public var gainM: Double { endAltitudeM - startAltitudeM }
    /// Mean grade, %.
    public var gradePercent: Double { lengthM > 0 ? 100 * gainM / lengthM : 0 }
    /// Garmin ClimbPro's climb score: length (m) × mean grade (%).
    public var score: Double { lengthM * gradePercent }
    /// The climb's figures by the keys `courses show --json` and the simulator's summary.json
    /// write them under, with the decimals written.
    public var figures: [(key: String, value: Double, decimals: Int)] {
        [("start_m", startAlongM, 1), ("end_m", endAlongM, 1), ("length_m", lengthM, 1), ("gain_m", gainM, 1),
         ("grade_percent", gradePercent, 2), ("score", score, 0)]
    }
    /// Strava's category by the same score (Best Bike Split's published table): 4 (≥ 8 000) to 1
    /// (≥ 64 000), 0 = hors catégorie (≥ 80 000); nil under 8 000 (uncategorised).
    public var category: Int? {
        let s = score
        if s >= 80_000 { return 0 }
        if s >= 64_000 { return 1 }
        if s >= 32_000 { return 2 }
        if s >= 16_000 { return 3 }
        if s >= 8_000 { return 4 }
        return nil
    }
}

/// What is wrong with a course (its compact file, or the parts it would be made of). The text
/// says what to do.
public enum CourseError: Error, Sendable, Hashable, CustomStringConvertible {
    case notACourseFile
    case unsupportedVersion(Int)
    case truncated(needed: Int, have: Int)
    case trailingBytes(Int)
    case checksumMismatch(stored: UInt32, computed: UInt32)
    case tooFewPoints(Int)
    case tooManyPoints(Int)
    case pointOutOfRange(index: Int)
    case distanceNotIncreasing(index: Int)
    case distanceMismatch(index: Int)
    case badAscent(index: Int)
    case tooManyCues(Int)
    case badCue(index: Int, why: String)
    case tooManyClimbs(Int)
    case badClimb(index: Int)
    case badText(String)

    public var description: String {
        let reimport = "import the course again (bikecomputer courses import FILE)"
        switch self {
        case .notACourseFile: return "not a compact course file (no BIKECRS1 magic); \(reimport)"
        case .unsupportedVersion(let v): return "course file version \(v) is not one this app reads (it reads \(CourseCodec.version)); \(reimport)"
        case .truncated(let needed, let have): return "the course file is truncated (\(have) bytes, \(needed) needed); \(reimport)"
        case .trailingBytes(let n): return "\(n) bytes after the course file's checksum; \(reimport)"
        case .checksumMismatch(let s, let c): return "the course file is damaged (CRC-32 \(hex(s)) stored, \(hex(c)) computed); \(reimport)"
        case .tooFewPoints(let n): return "a course needs at least 2 distinct points (it has \(n))"
        case .tooManyPoints(let n): return "the course has \(n) points after simplification; at most \(Course.pointsMax) fit in the unit's memory: split it into shorter courses"
        case .pointOutOfRange(let i): return "point \(i + 1) is not a position on Earth (latitude within ±90°, longitude within ±180°, finite)"
        case .distanceNotIncreasing(let i): return "point \(i + 1): the distance along the course does not increase"
        case .distanceMismatch(let i): return "point \(i + 1): the stored distance along the course does not match the points; \(reimport)"
        case .badAscent(let i): return "point \(i + 1): the cumulative ascent is not a finite, non-decreasing figure; \(reimport)"
        case .tooManyCues(let n): return "the course has \(n) cues; at most \(Course.cuesMax)"
        case .badCue(let i, let why): return "cue \(i + 1): \(why)"
        case .tooManyClimbs(let n): return "the course has \(n) climbs; at most \(Course.climbsMax)"
        case .badClimb(let i): return "climb \(i + 1) does not lie on the course from foot to top in course order; \(reimport)"
        case .badText(let what): return "\(what) is not valid UTF-8 text within its length limit"
        }
    }

    func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - s.count)) + s
    }
}

/// A course as the follower uses it: points in course order (positions quantised to 1e-7°, as the
/// compact file stores them), the distance along the course at each point (m, on the WGS 84
/// ellipsoid), altitude (NaN where unknown) and cumulative ascent, cues in course order (strictly
/// increasing distance), climbs. Immutable once made, and made only through `init`, which checks
/// every invariant the follower relies on (the importer and the decoder both come through it).
public final class Course: Sendable, Hashable, CustomStringConvertible {
    /// Points kept at most (after simplification): 100 000 points are ~2.4 MB on the card, ~3 MB
    /// in memory.
    public static let pointsMax = 100_000
    public static let cuesMax = 5_000
    public static let climbsMax = 500
    /// Bytes of UTF-8 at most: the course's name, a cue's name, a cue's notes.
    public static let nameBytesMax = 64
    public static let cueNameBytesMax = 64
    public static let cueNotesBytesMax = 256
    /// Ascent counts altitude changes beyond this hysteresis (m): the noise of a course's DEM
    /// altitudes is not climbing.
    public static let ascentHysteresisM = 2.0

    public let name: String
    public let latDeg: [Double]
    public let lonDeg: [Double]
    public let alongM: [Double]
    public let altitudeM: [Float]
    public let ascentM: [Float]
    public let cues: [Cue]
    public let climbs: [Climb]
    /// Compass bearing of each segment (from point i to i + 1), degrees; the last entry repeats
    /// the last segment's.
    public let bearingDeg: [Float]
    /// Whether any point has an altitude.
    public let hasAltitude: Bool
    public let totalDescentM: Double

    public var pointCount: Int { latDeg.count }
    public var lengthM: Double { alongM[alongM.count - 1] }
    public var totalAscentM: Double { Double(ascentM[ascentM.count - 1]) }

    public var description: String {
        "\(name): \(pointCount) points, \(Int(lengthM.rounded())) m, \(cues.count) cues, \(climbs.count) climbs"
    }

    public static func == (a: Course, b: Course) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) }

    /// Latitude and longitude as stored: whole units of 1e-7°.
    public static func quantised(_ deg: Double) -> Int32? {
        guard deg.isFinite, abs(deg) <= 180 else { return nil }
        return Int32((deg * 1e7).rounded())
    }

    /// Distance of the step from point i to point j (m): the one formula for the importer, the
    /// decoder's check and the follower.
    @inline(__always)
    static func stepM(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        Geodesy.distanceM(latDeg: lat1, lonDeg: lon1, latDeg: lat2, lonDeg: lon2)
    }

    /// Makes a course from points given as 1e-7° units, with their altitudes (NaN: unknown),
    /// cues and climbs. The distance and ascent per point are computed here; `storedAlongM` and
    /// `storedAscentM` (a decoded file's) must agree with them. Throws what is wrong.
    public init(name: String, latE7: [Int32], lonE7: [Int32], altitudeM: [Float], cues: [Cue], climbs: [Climb],
                storedAlongM: [Double]? = nil, storedAscentM: [Float]? = nil) throws(CourseError) {
        let n = latE7.count
        precondition(lonE7.count == n && altitudeM.count == n, "point arrays of one course have one length")
        guard n >= 2 else { throw .tooFewPoints(n) }
        guard n <= Self.pointsMax else { throw .tooManyPoints(n) }
        guard name.utf8.count <= Self.nameBytesMax else { throw .badText("the course name") }
        var lat = [Double](repeating: 0, count: n), lon = [Double](repeating: 0, count: n)
        for i in 0..<n {
            guard abs(latE7[i]) <= 900_000_000, lonE7[i] >= -1_800_000_000, lonE7[i] <= 1_800_000_000,
                  altitudeM[i].isNaN || (altitudeM[i].isFinite && abs(altitudeM[i]) < 100_000) else { throw .pointOutOfRange(index: i) }
            lat[i] = Double(latE7[i]) / 1e7
            lon[i] = Double(lonE7[i]) / 1e7
        }
        var along = [Double](repeating: 0, count: n)
        for i in 1..<n {
            let d = Self.stepM(lat[i - 1], lon[i - 1], lat[i], lon[i])
            guard d > 0 else { throw .distanceNotIncreasing(index: i) }
            along[i] = along[i - 1] + d
        }
        if let s = storedAlongM {
            guard s.count == n else { throw .distanceMismatch(index: min(n, s.count)) }
            for i in 0..<n where !(abs(s[i] - along[i]) <= 0.01 + 1e-9 * along[i]) { throw .distanceMismatch(index: i) }
            for i in 1..<n where !(s[i] > s[i - 1]) { throw .distanceNotIncreasing(index: i) }
        }
        // Ascent and descent with the ride's own hysteresis counter, over the known altitudes.
        var ascent = [Float](repeating: 0, count: n)
        var counter = AscentCounter(thresholdM: Self.ascentHysteresisM)
        var known = false
        for i in 0..<n {
            if !altitudeM[i].isNaN {
                known = true
                counter.add(Double(altitudeM[i]))
            }
            ascent[i] = Float(counter.ascentM)
        }
        let down = counter.descentM
        if let s = storedAscentM {
            guard s.count == n else { throw .badAscent(index: min(n, s.count)) }
            for i in 0..<n where !(s[i].isFinite && abs(s[i] - ascent[i]) <= 0.01 + 1e-6 * ascent[i]) { throw .badAscent(index: i) }
        }
        guard cues.count <= Self.cuesMax else { throw .tooManyCues(cues.count) }
        var previous = -1.0
        for (i, c) in cues.enumerated() {
            guard c.alongM.isFinite, c.alongM >= 0, c.alongM <= along[n - 1] else { throw .badCue(index: i, why: "it does not lie on the course") }
            guard c.alongM > previous else { throw .badCue(index: i, why: "cues are not in course order (strictly increasing distance)") }
            guard c.name.utf8.count <= Self.cueNameBytesMax, c.notes.utf8.count <= Self.cueNotesBytesMax else { throw .badText("cue \(i + 1)'s name or notes") }
            previous = c.alongM
        }
        guard climbs.count <= Self.climbsMax else { throw .tooManyClimbs(climbs.count) }
        var end = -1.0
        for (i, c) in climbs.enumerated() {
            guard c.startAlongM.isFinite, c.endAlongM.isFinite, c.startAltitudeM.isFinite, c.endAltitudeM.isFinite,
                  c.startAlongM >= 0, c.startAlongM > end, c.endAlongM > c.startAlongM, c.endAlongM <= along[n - 1] else { throw .badClimb(index: i) }
            end = c.endAlongM
        }
        var bearings = [Float](repeating: 0, count: n)
        for i in 0..<(n - 1) {
            let o = LocalPlane(latDeg: lat[i], lonDeg: lon[i]).offset(latDeg: lat[i + 1], lonDeg: lon[i + 1])
            bearings[i] = Float(Bearing.of(east: o.east, north: o.north))
        }
        bearings[n - 1] = bearings[n - 2]
        bearingDeg = bearings
        self.name = name
        latDeg = lat
        lonDeg = lon
        alongM = along
        self.altitudeM = altitudeM
        ascentM = ascent
        self.cues = cues
        self.climbs = climbs
        hasAltitude = known
        totalDescentM = down
    }

    /// The segment (from point i to i + 1) that holds distance `m` along the course: the last i
    /// with alongM[i] ≤ m, clamped to the segments there are.
    public func segment(atAlongM m: Double) -> Int {
        var lo = 0, hi = alongM.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if alongM[mid] <= m { lo = mid } else { hi = mid }
        }
        return lo
    }

    /// The course's position at distance `m` along it (linear between points).
    public func position(atAlongM m: Double) -> (latDeg: Double, lonDeg: Double) {
        let i = segment(atAlongM: m)
        let t = max(0, min(1, (m - alongM[i]) / (alongM[i + 1] - alongM[i])))
        var dLon = lonDeg[i + 1] - lonDeg[i]
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        var lon = lonDeg[i] + t * dLon
        if lon >= 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return (latDeg[i] + t * (latDeg[i + 1] - latDeg[i]), lon)
    }

    /// The course's altitude at distance `m` (linear between the nearest known altitudes), nil
    /// when the course has none.
    public func altitude(atAlongM m: Double) -> Double? {
        guard hasAltitude else { return nil }
        let i = segment(atAlongM: m)
        let a = altitudeM[i], b = altitudeM[i + 1]
        if a.isNaN && b.isNaN { return nearestAltitude(i) }
        if a.isNaN { return Double(b) }
        if b.isNaN { return Double(a) }
        let t = max(0, min(1, (m - alongM[i]) / (alongM[i + 1] - alongM[i])))
        return Double(a) + t * Double(b - a)
    }

    func nearestAltitude(_ i: Int) -> Double? {
        for k in 1..<pointCount {
            if i - k >= 0, !altitudeM[i - k].isNaN { return Double(altitudeM[i - k]) }
            if i + k < pointCount, !altitudeM[i + k].isNaN { return Double(altitudeM[i + k]) }
        }
        return nil
    }

    /// Cumulative ascent at distance `m` (m climbed from the start to there).
    public func ascent(atAlongM m: Double) -> Double {
        let i = segment(atAlongM: m)
        let t = max(0, min(1, (m - alongM[i]) / (alongM[i + 1] - alongM[i])))
        return Double(ascentM[i]) + t * Double(ascentM[i + 1] - ascentM[i])
    }

    /// The first cue at or after distance `m` (index into `cues`; `cues.count` when none).
    public func firstCue(atOrAfterM m: Double) -> Int {
        var lo = 0, hi = cues.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if cues[mid].alongM < m { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
