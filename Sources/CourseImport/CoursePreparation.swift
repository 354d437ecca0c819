import Navigation
import Positioning

/// How a course is prepared (docs/navigation.md, "Import").
public struct PreparationSettings: Sendable, Hashable {
    /// Ramer–Douglas–Peucker: a point is dropped when it lies within `simplifyM` of the chord
    /// between the points kept around it, and its altitude within `simplifyAltitudeM` of the
    /// chord's (so the climbs keep their shape).
    public var simplifyM = 2.0
    public var simplifyAltitudeM = 2.0
    /// RDP runs on pieces of at most this many points (their ends kept), which bounds its worst
    /// case on any input.
    public var simplifyChunk = 2_000
    /// A cue is put where the course passes nearest to it, searching from the previous cue on
    /// (a cue file's order) for a pass within this.
    public var cueSnapM = 50.0
    /// Derive turn cues from the bends when the file has none (CueRules).
    public var deriveCues = true
    /// Climbs (docs/navigation.md, "Climbs"): the profile sampled every `climbStepM`, smoothed
    /// over `climbSmoothM`; a climb does not reach back past a valley deeper than `climbDropMinM`
    /// (or `climbDropFraction` of its gain, if more); it counts from `climbLengthMinM`,
    /// `climbGradeMinPercent` and `climbScoreMin` (length × grade).
    public var climbStepM = 10.0
    public var climbSmoothM = 100.0
    public var climbDropMinM = 10.0
    public var climbDropFraction = 0.25
    public var climbLengthMinM = 500.0
    public var climbGradeMinPercent = 3.0
    public var climbScoreMin = 1_500.0
    /// A climb is looked for at most this far back from its top.
    public var climbLengthMaxM = 50_000.0
    /// The profile is sampled at most this many times (a longer course is sampled more coarsely),
    /// which bounds the climb search on any file.
    public var climbSamplesMax = 100_000
    /// GPX waypoints looked at as cues at most (a file of thousands of geocaches is no cue sheet);
    /// the rest are counted.
    public var waypointsMax = 1_000
    /// A cue in a file's order is looked for this many segments past the previous one at most.
    public var cueSearchSegmentsMax = 20_000

    public init() {}
}

/// Turns a file's raw course into a `Course`: quantised positions (1e-7°), repeated points
/// dropped, simplified, cues projected onto the route in order (strictly increasing distance) or
/// derived from its bends, climbs found.
public enum CoursePreparation {
    public static func prepare(_ raw: RawCourse, fallbackName: String, fileName: String,
                               settings: PreparationSettings = PreparationSettings()) throws(CourseImportError) -> (course: Course, report: ImportReport) {
        func fail(_ p: CourseImportError.Problem) -> CourseImportError { CourseImportError(file: fileName, p) }
        guard !raw.points.isEmpty else { throw fail(.noPoints(raw.format)) }
        // Quantise; drop a point equal to the one before.
        var lat: [Int32] = [], lon: [Int32] = [], alt: [Float] = [], fileDistance: [Double?] = []
        lat.reserveCapacity(raw.points.count); lon.reserveCapacity(raw.points.count)
        for (i, p) in raw.points.enumerated() {
            guard let la = Course.quantised(p.latDeg), let lo = Course.quantised(p.lonDeg), abs(p.latDeg) <= 90 else {
                throw fail(.pointOutOfRange(index: i, latDeg: p.latDeg, lonDeg: p.lonDeg))
            }
            let lo180 = lo == 1_800_000_000 ? -1_800_000_000 : lo
            if let l = lat.last, l == la, lon.last! == lo180 { continue }
            lat.append(la)
            lon.append(lo180)
            alt.append(p.altitudeM.flatMap { $0.isFinite && abs($0) < 100_000 ? Float($0) : nil } ?? .nan)
            fileDistance.append(p.distanceM)
        }
        guard lat.count >= 2 else { throw fail(.course(.tooFewPoints(lat.count))) }
        // The raw polyline's own distances (the frame cue distances are mapped through).
        let n = lat.count
        var rawAlong = [Double](repeating: 0, count: n)
        for i in 1..<n {
            rawAlong[i] = rawAlong[i - 1] + Geodesy.distanceM(latDeg: Double(lat[i - 1]) / 1e7, lonDeg: Double(lon[i - 1]) / 1e7,
                                                               latDeg: Double(lat[i]) / 1e7, lonDeg: Double(lon[i]) / 1e7)
        }
        let kept = simplify(lat: lat, lon: lon, alt: alt, along: rawAlong, settings: settings)
        guard kept.count <= Course.pointsMax else { throw fail(.course(.tooManyPoints(kept.count))) }
        let name = XMLReading.clipped(raw.name ?? fallbackName, bytes: Course.nameBytesMax)
        let shape: Course
        do {
            shape = try Course(name: name, latE7: kept.map { lat[$0] }, lonE7: kept.map { lon[$0] }, altitudeM: kept.map { alt[$0] },
                               cues: [], climbs: [])
        } catch {
            throw fail(.course(error))
        }
        // Raw distance → the simplified course's distance, through the kept points.
        func alongOnCourse(rawAlong r: Double) -> Double {
            var lo = 0, hi = kept.count - 1
            while hi - lo > 1 {
                let mid = (lo + hi) / 2
                if rawAlong[kept[mid]] <= r { lo = mid } else { hi = mid }
            }
            let r0 = rawAlong[kept[lo]], r1 = rawAlong[kept[hi]]
            let t = r1 > r0 ? max(0, min(1, (r - r0) / (r1 - r0))) : 0
            return shape.alongM[lo] + t * (shape.alongM[hi] - shape.alongM[lo])
        }
        // The file's distances, where every point has one and they never decrease.
        var fileFrame: [Double]?
        if fileDistance.allSatisfy({ $0 != nil }) {
            let d = fileDistance.map { $0! }
            if zip(d, d.dropFirst()).allSatisfy({ $0 <= $1 }) { fileFrame = d }
        }
        var cues: [Cue] = []
        var waypointsAway = raw.waypointsAway
        var previousAlong = 0.0
        var previousSegment = 0
        var waypointsSeen = 0, waypointsIgnored = 0, distancesWrong = 0
        for c in raw.cues {
            var along: Double?
            var inOrder = c.ordered
            if c.ordered, let d = c.distanceM, let frame = fileFrame {
                // A FIT course point's own distance, in the file's records' frame.
                var lo = 0, hi = frame.count - 1
                while hi - lo > 1 { let mid = (lo + hi) / 2; if frame[mid] <= d { lo = mid } else { hi = mid } }
                let t = frame[hi] > frame[lo] ? max(0, min(1, (d - frame[lo]) / (frame[hi] - frame[lo]))) : 0
                along = alongOnCourse(rawAlong: rawAlong[lo] + t * (rawAlong[hi] - rawAlong[lo]))
                // A distance that puts the point farther than cueSnapM from its own position is
                // wrong (Garmin Connect writes 0 for every course point, in no route order): the
                // point goes where the course first passes within cueSnapM of its position (else
                // nearest it), out of the file's order. Whole-course searches are bounded as the
                // waypoints' are (waypointsMax of them; past that the file's distance stands).
                if let la = c.latDeg, let lo = c.lonDeg, distancesWrong < settings.waypointsMax {
                    let at = shape.position(atAlongM: along!)
                    if Geodesy.distanceM(latDeg: at.latDeg, lonDeg: at.lonDeg, latDeg: la, lonDeg: lo) > settings.cueSnapM {
                        along = passNear(shape, latDeg: la, lonDeg: lo, fromSegment: 0, within: settings.cueSnapM).alongM
                        inOrder = false
                        distancesWrong += 1
                    }
                }
            } else if let la = c.latDeg, let lo = c.lonDeg {
                if c.ordered {
                    let m = passNear(shape, latDeg: la, lonDeg: lo, fromSegment: previousSegment, within: settings.cueSnapM,
                                     segmentsMax: settings.cueSearchSegmentsMax)
                    along = m.alongM
                    previousSegment = m.segment
                } else if waypointsSeen < settings.waypointsMax {
                    waypointsSeen += 1
                    along = firstPassNear(shape, latDeg: la, lonDeg: lo, within: CueRules.waypointMaxDistanceM)
                    if along == nil { waypointsAway += 1 }
                } else {
                    waypointsIgnored += 1
                }
            } else if let d = c.distanceM {
                along = min(shape.lengthM, max(0, d))
            }
            guard let a = along else { continue }
            if inOrder { previousAlong = max(previousAlong, a) }
            cues.append(Cue(alongM: inOrder ? previousAlong : a, type: c.type, name: c.name, notes: c.notes))
        }
        cues.sort { $0.alongM < $1.alongM }
        // Strictly increasing: cues at one place keep their order a centimetre apart.
        for i in cues.indices.dropFirst() where cues[i].alongM <= cues[i - 1].alongM {
            cues[i].alongM = cues[i - 1].alongM + 0.01
        }
        let fromFile = cues.count
        while let last = cues.last, last.alongM > shape.lengthM { cues.removeLast() }
        var warnings = raw.warnings
        if distancesWrong > 0 {
            warnings.append("\(distancesWrong) course points' distances put them more than \(Int(settings.cueSnapM)) m from their positions: placed by position")
        }
        if waypointsIgnored > 0 { warnings.append("\(waypointsIgnored) waypoints past the first \(settings.waypointsMax) were not looked at as cues") }
        if cues.count < fromFile { warnings.append("\(fromFile - cues.count) cues at the very end did not fit on the course") }
        var derived = 0
        if cues.isEmpty && settings.deriveCues {
            cues = bendCues(shape)
            derived = cues.count
        }
        guard cues.count <= Course.cuesMax else { throw fail(.tooManyCues(cues.count)) }
        let climbs = findClimbs(shape, settings: settings)
        let course: Course
        do {
            course = try Course(name: name, latE7: kept.map { lat[$0] }, lonE7: kept.map { lon[$0] }, altitudeM: kept.map { alt[$0] },
                                cues: cues, climbs: climbs)
        } catch {
            throw fail(.course(error))
        }
        let report = ImportReport(format: raw.format, pointsRead: raw.points.count, pointsKept: course.pointCount,
                                  cuesFromFile: fromFile, cuesDerived: derived, waypointsAway: waypointsAway, warnings: warnings)
        return (course, report)
    }

    // MARK: Simplification

    /// Ramer–Douglas–Peucker on pieces of `simplifyChunk` points, iterative (no recursion):
    /// indices of the points kept, first and last always.
    static func simplify(lat: [Int32], lon: [Int32], alt: [Float], along: [Double], settings: PreparationSettings) -> [Int] {
        let n = lat.count
        var keep = [Bool](repeating: false, count: n)
        keep[0] = true
        keep[n - 1] = true
        var stack: [(Int, Int)] = []
        var chunkStart = 0
        while chunkStart < n - 1 {
            let chunkEnd = min(n - 1, chunkStart + settings.simplifyChunk)
            keep[chunkEnd] = true
            let plane = LocalPlane(latDeg: Double(lat[chunkStart]) / 1e7, lonDeg: Double(lon[chunkStart]) / 1e7)
            stack.append((chunkStart, chunkEnd))
            while let (a, b) = stack.popLast() {
                guard b - a >= 2 else { continue }
                let pa = plane.offset(latDeg: Double(lat[a]) / 1e7, lonDeg: Double(lon[a]) / 1e7)
                let pb = plane.offset(latDeg: Double(lat[b]) / 1e7, lonDeg: Double(lon[b]) / 1e7)
                let dx = pb.east - pa.east, dy = pb.north - pa.north
                let len2 = dx * dx + dy * dy
                let altitudes = !alt[a].isNaN && !alt[b].isNaN
                var worst = 0.0
                var worstIndex = -1
                for k in (a + 1)..<b {
                    let p = plane.offset(latDeg: Double(lat[k]) / 1e7, lonDeg: Double(lon[k]) / 1e7)
                    let ex = p.east - pa.east, ey = p.north - pa.north
                    var h: Double
                    if len2 > 0 {
                        // Distance to the chord as a segment (a loop's far point is kept).
                        let t = max(0, min(1, (ex * dx + ey * dy) / len2))
                        let rx = ex - t * dx, ry = ey - t * dy
                        h = (rx * rx + ry * ry).squareRoot()
                    } else {
                        h = (ex * ex + ey * ey).squareRoot()
                    }
                    var e = h / settings.simplifyM
                    if altitudes, !alt[k].isNaN, along[b] > along[a] {
                        let t = (along[k] - along[a]) / (along[b] - along[a])
                        let z = Double(alt[a]) + t * Double(alt[b] - alt[a])
                        e = max(e, abs(Double(alt[k]) - z) / settings.simplifyAltitudeM)
                    } else if !alt[k].isNaN && (alt[a].isNaN || alt[b].isNaN) {
                        e = max(e, 1.01) // an altitude next to a point without one is kept
                    }
                    if e > worst { worst = e; worstIndex = k }
                }
                if worst > 1, worstIndex > 0 {
                    keep[worstIndex] = true
                    stack.append((a, worstIndex))
                    stack.append((worstIndex, b))
                }
            }
            chunkStart = chunkEnd
        }
        var out: [Int] = []
        for i in 0..<n where keep[i] { out.append(i) }
        return out
    }

    // MARK: Cues on the route

    /// The segment i's nearest point to (lat, lon), m.
    static func project(_ c: Course, _ i: Int, _ plane: LocalPlane) -> (alongM: Double, distanceM: Double) {
        let a = plane.offset(latDeg: c.latDeg[i], lonDeg: c.lonDeg[i])
        let b = plane.offset(latDeg: c.latDeg[i + 1], lonDeg: c.lonDeg[i + 1])
        let dx = b.east - a.east, dy = b.north - a.north
        let len2 = dx * dx + dy * dy
        let t = len2 > 0 ? max(0, min(1, -(a.east * dx + a.north * dy) / len2)) : 0
        let px = a.east + t * dx, py = a.north + t * dy
        return (c.alongM[i] + t * (c.alongM[i + 1] - c.alongM[i]), (px * px + py * py).squareRoot())
    }

    /// From segment `from` on: the first pass within `within` of the point (its nearest point),
    /// else the nearest point after `from`.
    static func passNear(_ c: Course, latDeg: Double, lonDeg: Double, fromSegment from: Int, within: Double,
                         segmentsMax: Int = Int.max) -> (alongM: Double, segment: Int) {
        let plane = LocalPlane(latDeg: latDeg, lonDeg: lonDeg)
        var run: (alongM: Double, distanceM: Double, segment: Int)?
        var nearest: (alongM: Double, distanceM: Double, segment: Int)?
        for i in from..<min(c.pointCount - 1, from + min(segmentsMax, c.pointCount)) {
            let m = project(c, i, plane)
            if nearest == nil || m.distanceM < nearest!.distanceM { nearest = (m.alongM, m.distanceM, i) }
            if m.distanceM <= within {
                if run == nil || m.distanceM < run!.distanceM { run = (m.alongM, m.distanceM, i) }
            } else if let r = run {
                return (r.alongM, r.segment)
            }
        }
        if let r = run { return (r.alongM, r.segment) }
        return (nearest!.alongM, nearest!.segment)
    }

    /// The first pass of the course within `within` of the point (a waypoint on an out-and-back
    /// belongs to the way out), or nil.
    static func firstPassNear(_ c: Course, latDeg: Double, lonDeg: Double, within: Double) -> Double? {
        let m = passNear(c, latDeg: latDeg, lonDeg: lonDeg, fromSegment: 0, within: within)
        let plane = LocalPlane(latDeg: latDeg, lonDeg: lonDeg)
        return project(c, m.segment, plane).distanceM <= within ? m.alongM : nil
    }

    /// Turn cues from the course's bends (CueRules): at each point, the direction over
    /// `legM` before and after it; points turning `turnMinDeg` or more within `mergeM` of each
    /// other are one bend, typed by its net change of direction, placed at its sharpest point.
    public static func bendCues(_ c: Course) -> [Cue] {
        let leg = CueRules.legM
        func bearing(_ from: (latDeg: Double, lonDeg: Double), _ to: (latDeg: Double, lonDeg: Double)) -> Double? {
            let o = LocalPlane(latDeg: from.latDeg, lonDeg: from.lonDeg).offset(latDeg: to.latDeg, lonDeg: to.lonDeg)
            guard o.east * o.east + o.north * o.north > 1 else { return nil }
            return Bearing.of(east: o.east, north: o.north)
        }
        var bends: [(alongM: Double, turn: Double)] = []
        for i in 1..<(c.pointCount - 1) {
            let a = c.alongM[i]
            guard a >= leg, a <= c.lengthM - leg else { continue }
            let here = (c.latDeg[i], c.lonDeg[i])
            guard let bin = bearing(c.position(atAlongM: a - leg), here), let bout = bearing(here, c.position(atAlongM: a + leg)) else { continue }
            let t = Bearing.turn(from: bin, to: bout)
            if abs(t) >= CueRules.turnMinDeg { bends.append((a, t)) }
        }
        var cues: [Cue] = []
        var k = 0
        while k < bends.count {
            var j = k
            while j + 1 < bends.count, bends[j + 1].alongM - bends[j].alongM <= CueRules.mergeM { j += 1 }
            let first = bends[k].alongM, last = bends[j].alongM
            var sharpest = k
            for m in k...j where abs(bends[m].turn) > abs(bends[sharpest].turn) { sharpest = m }
            if let bin = bearing(c.position(atAlongM: max(0, first - leg)), c.position(atAlongM: first)),
               let bout = bearing(c.position(atAlongM: last), c.position(atAlongM: min(c.lengthM, last + leg))) {
                // A U-turn's net change reads as ±180: the sign of its sharpest point says which way.
                var net = Bearing.turn(from: bin, to: bout)
                if abs(net) > CueRules.uTurnMinDeg { net = bends[sharpest].turn < 0 ? -abs(net) : abs(net) }
                if let type = CueType.forTurn(net) {
                    let at = bends[sharpest].alongM
                    if cues.last.map({ at > $0.alongM }) ?? true { cues.append(Cue(alongM: at, type: type)) }
                }
            }
            k = j + 1
        }
        return cues
    }

    // MARK: Climbs

    /// Climbs on the course's profile (PreparationSettings' rules), foot to top.
    public static func findClimbs(_ c: Course, settings: PreparationSettings) -> [Climb] {
        guard c.hasAltitude, c.lengthM >= settings.climbLengthMinM else { return [] }
        let step = max(settings.climbStepM, c.lengthM / Double(settings.climbSamplesMax))
        let count = Int(c.lengthM / step) + 1
        var raw = [Double](repeating: 0, count: count)
        for k in 0..<count { raw[k] = c.altitude(atAlongM: min(c.lengthM, Double(k) * step)) ?? 0 }
        // Moving average over ±half the smoothing length.
        let half = max(0, Int(settings.climbSmoothM / step / 2))
        var smooth = [Double](repeating: 0, count: count)
        var sum = 0.0, lo = 0, hi = -1
        for k in 0..<count {
            while hi < min(count - 1, k + half) { hi += 1; sum += raw[hi] }
            while lo < max(0, k - half) { sum -= raw[lo]; lo += 1 }
            smooth[k] = sum / Double(hi - lo + 1)
        }
        let probe = max(1, Int(100 / step))
        let reach = Int(settings.climbLengthMaxM / step)
        var candidates: [Climb] = []
        // Every local top (the highest point within 100 m each way, its flat top trimmed) is
        // the top of at most one climb: going back from it until the road has risen
        // `climbDropMinM` (or `climbDropFraction` of the gain) above the lowest point passed —
        // a descent into the valley before — the climb's foot is the lowest point from which
        // the mean grade to the top is still `climbGradeMinPercent` (the score is 100 × the gain,
        // so that is the highest-scoring climb to this top), without a flat run-in (less than
        // 1 m over the next 100 m).
        for t in 1..<count {
            var isTop = true
            for i in 1...probe {
                if t - i >= 0 && smooth[t - i] > smooth[t] { isTop = false; break }
                if t + i < count && smooth[t + i] > smooth[t] { isTop = false; break }
            }
            // A plateau's first point only (the road rises into it).
            guard isTop, smooth[t - 1] < smooth[t] else { continue }
            var top = t
            while top - probe > 0, smooth[top] - smooth[top - probe] < 1 { top -= 1 }
            var low = top
            var best: Int?
            var k = top - 1
            while k >= 0 && top - k <= reach {
                if smooth[k] < smooth[low] { low = k }
                let gain = smooth[top] - smooth[low]
                if smooth[k] - smooth[low] > max(settings.climbDropMinM, settings.climbDropFraction * gain) { break }
                if (smooth[top] - smooth[k]) / (Double(top - k) * step) * 100 >= settings.climbGradeMinPercent,
                   best == nil || smooth[k] < smooth[best!] { best = k }
                k -= 1
            }
            guard var f = best else { continue }
            while f + probe < top, smooth[f + probe] - smooth[f] < 1 { f += 1 }
            // The smoothing moves a climb's ends out by up to half its length (a 6 % ramp read
            // as 1.34 km at 5.4 %): each end is put back on the raw profile within that reach,
            // the top at the first highest point, the foot at the last lowest one.
            let topSmoothed = top, footSmoothed = f
            for k in max(footSmoothed + 1, topSmoothed - half)...min(count - 1, topSmoothed + half) where raw[k] > raw[top] || (k < top && raw[k] == raw[top]) { top = k }
            for k in max(0, footSmoothed - half)...min(top - 1, footSmoothed + half) where raw[k] <= raw[f] { f = k }
            precondition(f < top, "a climb's foot lies before its top")
            let start = Double(f) * step, end = min(c.lengthM, Double(top) * step)
            let climb = Climb(startAlongM: start, endAlongM: end, startAltitudeM: c.altitude(atAlongM: start) ?? smooth[f],
                              endAltitudeM: c.altitude(atAlongM: end) ?? smooth[top])
            if climb.lengthM >= settings.climbLengthMinM, climb.gradePercent >= settings.climbGradeMinPercent,
               climb.score >= settings.climbScoreMin {
                candidates.append(climb)
            }
        }
        // Where candidates overlap the higher-scoring one stands.
        var climbs: [Climb] = []
        for k in candidates.sorted(by: { $0.score > $1.score }) where climbs.count < Course.climbsMax {
            if climbs.allSatisfy({ k.endAlongM <= $0.startAlongM || k.startAlongM >= $0.endAlongM }) { climbs.append(k) }
        }
        climbs.sort { $0.startAlongM < $1.startAlongM }
        return climbs
    }
}
