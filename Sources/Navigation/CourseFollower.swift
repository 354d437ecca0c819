import RideModel
/// The follower's rules, with their documented defaults (docs/navigation.md).
public struct FollowerSettings: Sendable, Hashable {
    /// Each fix is matched within this window of the course around the last match: back, ahead
    /// (ahead grows with the distance moved since the last fix, after a lost fix).
    public var windowBackM = 300.0
    public var windowAheadM = 2_000.0
    /// The windowed match prefers the part of the course where the rider is expected (last match
    /// + distance moved): each metre further along costs this many metres of distance, beyond
    /// the slack (plus the distance moved).
    public var alongWeight = 0.5
    public var alongSlackM = 30.0
    /// A segment pointing more than 90° away from the rider's heading costs this much.
    public var headingPenaltyM = 20.0
    /// Off course: farther than this from the course for `offCourseFixes` consecutive fixes (or
    /// two that span the time those take at 1 Hz), while moving.
    public var offCourseDistanceM = 50.0
    public var offCourseFixes = 3
    /// Back on course: within this for `onCourseFixes` consecutive fixes, moving forward.
    public var onCourseDistanceM = 30.0
    public var onCourseFixes = 2
    /// Wrong way: heading more than this from the course's direction for `wrongWayFixes`
    /// consecutive fixes at `wrongWaySpeedMps` or more, having gone back `wrongWayBackM`.
    public var wrongWayAngleDeg = 120.0
    public var wrongWayFixes = 5
    public var wrongWaySpeedMps = 2.0
    public var wrongWayBackM = 15.0
    /// Nothing alarms below this speed (standing at a junction, walking the bike).
    public var movingSpeedMps = 1.5
    /// A jump to another part of the course: a place there within `jumpDistanceM` for
    /// `jumpFixes` consecutive fixes, advancing along it in the course's direction.
    public var jumpDistanceM = 30.0
    public var jumpFixes = 3
    /// A candidate closer than this along the course to the current match is the same place.
    public var jumpExcludeM = 100.0
    /// A jump never moves to another lap: forward, never past the place where the course comes
    /// back, going the same way (within this angle), to where the rider was last on it; backward,
    /// never when the course passed that place before, going the same way. A rider in a detour
    /// on lap 1 riding the road of lap 2 is on lap 2 by position only, never by the distance
    /// ridden (docs/navigation.md, "Laps").
    public var lapAngleDeg = 60.0
    /// The first lock: a part of the course within this (the lowest distance along among those
    /// going the rider's way).
    public var acquireDistanceM = 50.0
    /// The heading is the direction of the last displacement of at least this much.
    public var headingStepM = 8.0
    /// Fixes further apart than this are not consecutive (the fix was lost between them), for a
    /// receiver that gives a fix every second. A source whose fixes come further apart as a rule
    /// (a recording that kept a position every 4-6 s) is lost only after `fixLostIntervals` of its
    /// own usual interval, and always after `fixLostMaxMs`: without that, every gap reset the
    /// counts of far fixes and a detour on such a recording never alarmed.
    public var fixLostMs: Int64 = 3_000
    public var fixLostIntervals = 2.5
    public var fixLostMaxMs: Int64 = 15_000
    /// Cues: the first word between `cueFirstMinM` and `cueFirstMaxM` before (30 s at the
    /// current speed, clamped), the approach at `cueApproachM` or `cueApproachS` before
    /// (whichever is further), "now" within `cueNowM`; passed `cuePassedM` beyond it.
    public var cueFirstMinM = 150.0
    public var cueFirstMaxM = 300.0
    public var cueFirstS = 30.0
    public var cueApproachM = 100.0
    public var cueApproachS = 15.0
    public var cueNowM = 25.0
    public var cuePassedM = 10.0
    /// The cue after the next is shown with it when this close after it.
    public var closeCuesM = 200.0
    /// Within this of the end, on course: finished.
    public var finishM = 30.0

    public init() {}
}

/// A fix as the follower takes it: position, instant (ms on the caller's clock), speed if known.
public struct NavigationFix: Sendable, Hashable {
    public var latDeg: Double
    public var lonDeg: Double
    public var atMs: Int64
    public var speedMps: Double?

    public init(latDeg: Double, lonDeg: Double, atMs: Int64, speedMps: Double? = nil) {
        self.latDeg = latDeg
        self.lonDeg = lonDeg
        self.atMs = atMs
        self.speedMps = speedMps
    }
}

/// A stretch off the course (or the wrong way): from the first fix beyond the off-course distance
/// (or the first going backwards) to the fix that put the rider back on it. The ride's metadata
/// keeps the same record (`CourseMetadata.Period`).
public typealias OffCoursePeriod = CourseMetadata.Period

/// A cue announced at a fix.
public struct CueAnnouncement: Sendable, Hashable {
    public var index: Int
    public var stage: CueStage
    /// How far before the cue the rider was, m.
    public var distanceM: Double
}

/// What one fix caused (a fixed-size value: no allocation).
public struct NavigationEvents: Sendable, Hashable {
    /// The first lock onto the course.
    public var locked = false
    /// Just went off course / the wrong way: alarm.
    public var offCourse = false
    public var wrongWay = false
    /// Back on course: the period that ended.
    public var backOnCourse: OffCoursePeriod?
    public var cue: CueAnnouncement?
    /// Just reached the foot of climb n (0-based).
    public var climbStarted: Int?
    public var finished = false
    /// Moved to another part of the course on sustained evidence.
    public var jumped = false

    public var isEmpty: Bool { self == NavigationEvents() }
}

/// A place on the course near a fix.
struct Match: Sendable, Hashable {
    var segment: Int
    var alongM: Double
    var distanceM: Double
    /// The matched point's offset from the fix, m.
    var east: Double
    var north: Double
}

/// Follows one course through a ride's fixes (docs/navigation.md). A value: its state is a few
/// numbers; the course is shared and read only. `update` allocates nothing: it walks the course's
/// arrays inside a window (or, while searching, the whole course once per fix).
public struct CourseFollower: Sendable {
    public let course: Course
    public let settings: FollowerSettings
    public private(set) var view: NavigationView

    var state: NavigationState = .acquiring
    var along = 0.0
    var segment = 0
    var lastFix: NavigationFix?
    /// The heading: the direction from `headingAnchor` to the last fix once it is
    /// `headingStepM` away.
    var headingAnchor: (lat: Double, lon: Double, atMs: Int64)?
    var heading: Double?
    /// Moving distance and time since the follower started (the average for the time to go).
    var movingM = 0.0
    var movingMs: Int64 = 0
    var farFixes = 0
    var nearFixes = 0
    var backFixes = 0
    var backStartAlong = 0.0
    /// The source's usual interval between fixes, ms: moving half way to each interval, up or
    /// down (a unit's smart recording: 1-8 s, longer on straight roads; one short interval
    /// among longer ones does not make the next long one a lost fix); 0 before the second fix.
    var usualIntervalMs: Int64 = 0
    /// The period being built: first fix beyond the distance (or backwards), alarm, max distance.
    var pendingStartMs: Int64?
    var periodStartMs: Int64 = 0
    var periodAlarmMs: Int64 = 0
    var periodMaxM = 0.0
    /// A candidate elsewhere on the course, and how many fixes in a row it held.
    var jumpAlong: Double?
    var jumpFixes = 0
    /// Where the rider was last on the course (within the off-course distance, not going back):
    /// the match's distance along, and the rider's heading there (the course's direction when
    /// the heading is not known: the match may be on the segment of a turn the rider did not
    /// take).
    var lastOnAlong: Double?
    var lastOnBearing = 0.0
    /// The course's next and previous passes of that place going the same way (`laps`), for
    /// the `lastOnAlong` they were found for (infinity, minus infinity: none).
    var lapAheadAlong = Double.infinity
    var lapBehindAlong = -Double.infinity
    var lapsFor: Double?
    var nextCue = 0
    var cueStage = CueStage.none
    /// Where the lock was made: the end counts only after riding some of the course.
    var lockAlong = 0.0
    var climbIndex: Int?
    public private(set) var fixes: UInt64 = 0
    /// Whole-course searches run (acquiring, off course, going backwards).
    public private(set) var globalSearches: UInt64 = 0
    public private(set) var jumps: UInt64 = 0

    public init(course: Course, settings: FollowerSettings = FollowerSettings()) {
        self.course = course
        self.settings = settings
        view = NavigationView(course: course)
        view.distanceToGoM = course.lengthM
        view.ascentToGoM = course.hasAltitude ? course.totalAscentM : nil
        refreshClimb()
    }

    public var navigationState: NavigationState { state }
    public var alongM: Double? { state == .acquiring ? nil : along }

    // MARK: Fixes

    /// No position at `atMs` (a record without a fix): past `fixLostMs` the view says the GPS is
    /// lost; the counters of consecutive fixes start again (a lost fix is never "off course").
    public mutating func noFix(at atMs: Int64) {
        guard let last = lastFix, atMs - last.atMs > fixLostAfterMs else { return }
        view.gpsLost = true
        resetCounters()
    }

    /// How long without a fix the fix is lost: `fixLostMs`, or 2.5 of the source's usual
    /// intervals when its fixes come further apart, at most `fixLostMaxMs`.
    var fixLostAfterMs: Int64 {
        let own = Int64(Double(usualIntervalMs) * settings.fixLostIntervals)
        return min(max(settings.fixLostMs, own), max(settings.fixLostMs, settings.fixLostMaxMs))
    }

    /// One interval between two fixes into `usualIntervalMs` (after it was judged by the usual
    /// interval before it): half way from the usual one to it (the half rounded up).
    /// A gap beyond `fixLostMaxMs` is left out; a 1 Hz receiver's shorter lost fix raises it for
    /// a few seconds (a 10 s gap: 5.5 s, then 3.25, 2.1, 1.6 s at the next 1 s intervals).
    /// (Before, a shorter interval replaced it at once: on a recording that kept a position
    /// every 1-6 s, one 1 s interval made the next 4 s one a lost fix and restarted the count of
    /// far fixes: 2013-04-11's detour alarmed 11 s after leaving, docs/navigation.md.)
    mutating func noteInterval(_ dtMs: Int64) {
        guard dtMs > 0, dtMs <= settings.fixLostMaxMs else { return }
        if usualIntervalMs == 0 {
            usualIntervalMs = dtMs
        } else if dtMs > usualIntervalMs {
            usualIntervalMs += (dtMs - usualIntervalMs + 1) / 2
        } else {
            usualIntervalMs -= (usualIntervalMs - dtMs + 1) / 2
        }
        assert(usualIntervalMs > 0 && usualIntervalMs <= settings.fixLostMaxMs)
    }

    mutating func resetCounters() {
        farFixes = 0
        nearFixes = 0
        backFixes = 0
        jumpFixes = 0
        jumpAlong = nil
        if state == .onCourse { pendingStartMs = nil }
    }

    /// One fix. `alarms`: whether the ride is running (off course, wrong way and cues are
    /// announced only then; the match is kept up to date either way).
    public mutating func update(_ fix: NavigationFix, alarms: Bool = true) -> NavigationEvents {
        var events = NavigationEvents()
        guard fix.latDeg.isFinite, fix.lonDeg.isFinite, abs(fix.latDeg) <= 90, abs(fix.lonDeg) <= 180 else { return events }
        if let last = lastFix, fix.atMs <= last.atMs { return events }
        fixes &+= 1
        let plane = LocalPlane(latDeg: fix.latDeg, lonDeg: fix.lonDeg)
        var step = 0.0
        var dtMs: Int64 = 0
        if let last = lastFix {
            let o = plane.offset(latDeg: last.latDeg, lonDeg: last.lonDeg)
            step = (o.east * o.east + o.north * o.north).squareRoot()
            dtMs = fix.atMs - last.atMs
            if dtMs > fixLostAfterMs { resetCounters() }
            noteInterval(dtMs)
        }
        let speed = fix.speedMps ?? (dtMs > 0 ? step * 1000 / Double(dtMs) : 0)
        let moving = speed >= settings.movingSpeedMps
        if moving && dtMs > 0 && dtMs <= 5_000 {
            movingM += speed * Double(dtMs) / 1000
            movingMs += dtMs
        }
        updateHeading(fix, plane)
        lastFix = fix
        view.gpsLost = false
        view.latDeg = fix.latDeg
        view.lonDeg = fix.lonDeg
        view.headingDeg = heading

        if state == .acquiring {
            acquire(fix, plane, alarms: alarms, &events)
        } else {
            follow(fix, plane, step: step, speed: speed, moving: moving, alarms: alarms, &events)
        }
        refreshFigures()
        if state != .acquiring && state != .offCourse && state != .wrongWay { announceCues(speed: speed, alarms: alarms, &events) }
        if state != .acquiring { refreshClimb(&events) }
        return events
    }

    mutating func updateHeading(_ fix: NavigationFix, _ plane: LocalPlane) {
        guard let a = headingAnchor else {
            headingAnchor = (fix.latDeg, fix.lonDeg, fix.atMs)
            return
        }
        let o = plane.offset(latDeg: a.lat, lonDeg: a.lon)
        let d = (o.east * o.east + o.north * o.north).squareRoot()
        if fix.atMs - a.atMs > 10_000 && d < settings.headingStepM * 4 {
            // Less than a few metres in ten seconds: standing (or a lost fix in between).
            heading = nil
            headingAnchor = (fix.latDeg, fix.lonDeg, fix.atMs)
        } else if d >= settings.headingStepM {
            heading = Bearing.of(east: -o.east, north: -o.north)
            headingAnchor = (fix.latDeg, fix.lonDeg, fix.atMs)
        }
    }

    // MARK: The first lock

    mutating func acquire(_ fix: NavigationFix, _ plane: LocalPlane, alarms: Bool, _ events: inout NavigationEvents) {
        let found = searchCourse(plane, within: settings.acquireDistanceM, preferLowestAlong: true)
        // A part going the rider's way first; else one against it (riding the course backwards:
        // the wrong-way rule takes over from there).
        if let m = found.best ?? found.bestAgainst {
            lock(at: m)
            state = .onCourse
            events.locked = true
            nextCue = course.firstCue(atOrAfterM: along - settings.cuePassedM)
            cueStage = .none
            pointBack(nil, plane)
        } else {
            pointBack(found.nearest, plane)
        }
    }

    mutating func lock(at m: Match) {
        if state == .acquiring { lockAlong = m.alongM }
        along = m.alongM
        segment = m.segment
        view.offsetM = m.distanceM
    }

    // MARK: Following

    mutating func follow(_ fix: NavigationFix, _ plane: LocalPlane, step: Double, speed: Double, moving: Bool,
                         alarms: Bool, _ events: inout NavigationEvents) {
        let backwards = state == .wrongWay
        let predicted = along + (backwards ? -step : step)
        // Off course, the window's match may not wander from the lap the rider left: back no
        // further than the window behind the place they left, ahead short of its next pass. (It
        // moves with the best match each fix, and where the rider's road is another pass of the
        // course — an out-and-back ridden several times — it walked onto one and called the
        // rider back on course a lap early.)
        var bounds = (lo: -Double.infinity, hi: Double.infinity)
        if state == .offCourse, let from = lastOnAlong {
            bounds = (from - settings.windowBackM, laps().ahead)
        }
        let (m, nearestM) = matchInWindow(plane, predicted: predicted, extraAheadM: 3 * step, backwards: backwards, within: bounds)
        let previousAlong = along
        lock(at: m)
        let segBearing = Double(course.bearingDeg[m.segment])
        view.courseBearingDeg = segBearing
        let far = m.distanceM > settings.offCourseDistanceM
        let near = m.distanceM <= settings.onCourseDistanceM
        var against = false
        if let h = heading, speed >= settings.wrongWaySpeedMps {
            against = abs(Bearing.turn(from: segBearing, to: h)) > settings.wrongWayAngleDeg
        }
        let aligned = heading.map { abs(Bearing.turn(from: segBearing, to: $0)) < 90 } ?? (along >= previousAlong)

        switch state {
        case .finished:
            break
        case .onCourse:
            if far {
                if farFixes == 0 { pendingStartMs = fix.atMs }
                farFixes += 1
            } else {
                farFixes = 0
                if !against { pendingStartMs = nil }
            }
            if against && near {
                if backFixes == 0 { backStartAlong = previousAlong; if pendingStartMs == nil { pendingStartMs = fix.atMs } }
                backFixes += 1
            } else {
                backFixes = 0
            }
            if !far && !against {
                lastOnAlong = m.alongM
                lastOnBearing = heading ?? segBearing
            }
            // Another part of the course going the rider's way (a loop's other leg, an
            // out-and-back locked on the wrong leg while standing): jump there on sustained
            // evidence, before any alarm.
            if far || backFixes > 0 {
                if considerJump(plane, step: step, &events) { return }
            }
            guard alarms, moving else { break }
            if farFixes >= settings.offCourseFixes || farLongEnough(at: fix.atMs) {
                startPeriod(at: fix.atMs, distance: nearestM, wrongWay: false)
                state = .offCourse
                events.offCourse = true
                backFixes = 0
            } else if backFixes >= settings.wrongWayFixes && backStartAlong - along >= settings.wrongWayBackM {
                startPeriod(at: fix.atMs, distance: nearestM, wrongWay: true)
                state = .wrongWay
                events.wrongWay = true
                farFixes = 0
            }
        case .offCourse, .wrongWay:
            periodMaxM = max(periodMaxM, nearestM)
            if state == .wrongWay && far {
                // Going backwards and now away from the course too: off course.
                farFixes += 1
            }
            if near && aligned && !against {
                nearFixes += 1
            } else {
                nearFixes = 0
            }
            if nearFixes >= settings.onCourseFixes {
                endPeriod(at: fix.atMs, &events)
            } else if considerJump(plane, step: step, &events) {
                return
            } else if state == .wrongWay && farFixes >= settings.offCourseFixes {
                state = .offCourse
                farFixes = 0
            }
        case .acquiring:
            break
        }
        if state == .offCourse || state == .wrongWay {
            pointBack(m, plane)
        } else {
            view.backBearingDeg = nil
            view.backDistanceM = nil
        }
        // The end: near it, having ridden some of the course since the lock (a rider who starts
        // at the end of a course to ride it backwards has not finished it).
        if state == .onCourse && along >= course.lengthM - settings.finishM && along - lockAlong >= min(1_000, course.lengthM / 2) {
            state = .finished
            events.finished = true
        }
    }

    /// Two far fixes in a row that span the time `offCourseFixes` take at 1 Hz (2 s): a source
    /// whose fixes come every few seconds alarms as soon as a 1 Hz receiver would, not three of
    /// its own intervals later; a single bad fix still never alarms. (`pendingStartMs` is the
    /// first far fix's time while `farFixes` counts.)
    func farLongEnough(at atMs: Int64) -> Bool {
        guard farFixes >= 2, let first = pendingStartMs else { return false }
        return atMs - first >= Int64(settings.offCourseFixes - 1) * 1_000
    }

    mutating func startPeriod(at atMs: Int64, distance: Double, wrongWay: Bool) {
        periodStartMs = pendingStartMs ?? atMs
        periodAlarmMs = atMs
        periodMaxM = distance
        pendingStartMs = nil
        nearFixes = 0
        jumpFixes = 0
        jumpAlong = nil
        _ = wrongWay
    }

    mutating func endPeriod(at atMs: Int64, _ events: inout NavigationEvents) {
        events.backOnCourse = OffCoursePeriod(startMs: periodStartMs, endMs: atMs, alarmMs: periodAlarmMs,
                                              maxDistanceM: periodMaxM, wrongWay: state == .wrongWay)
        state = .onCourse
        farFixes = 0
        nearFixes = 0
        backFixes = 0
        jumpFixes = 0
        jumpAlong = nil
        // Cues passed while away are not announced late.
        let first = course.firstCue(atOrAfterM: along - settings.cuePassedM)
        if first > nextCue { nextCue = first; cueStage = .none }
    }

    /// Looks for another part of the course within `jumpDistanceM` going the rider's way, away
    /// from the current match; moves there once it has held for `jumpFixes` fixes in a row,
    /// advancing. Returns whether it jumped.
    mutating func considerJump(_ plane: LocalPlane, step: Double, _ events: inout NavigationEvents) -> Bool {
        let (behind, ahead) = laps()
        // Backward only when the course never passed the rider's last place before (the same
        // lap); forward only short of its next pass there. (`laps` finds a pass only from a
        // place: `lastOnAlong` is set whenever `behind` is finite.)
        let after = behind.isFinite ? lastOnAlong! - settings.jumpExcludeM : -Double.infinity
        let found = searchCourse(plane, within: settings.jumpDistanceM, preferLowestAlong: false, awayFrom: along,
                                 after: after, before: ahead)
        guard let c = found.best else {
            jumpFixes = 0
            jumpAlong = nil
            return false
        }
        if let previous = jumpAlong, c.alongM - previous >= -settings.alongSlackM, c.alongM - previous <= step + settings.alongSlackM {
            jumpFixes += 1
        } else {
            jumpFixes = 1
        }
        jumpAlong = c.alongM
        guard jumpFixes >= settings.jumpFixes else { return false }
        assert(c.alongM > after && c.alongM < ahead, "a jump lands on the lap the rider left")
        jumps &+= 1
        events.jumped = true
        let wasAway = state == .offCourse || state == .wrongWay
        lock(at: c)
        view.courseBearingDeg = Double(course.bearingDeg[c.segment])
        if wasAway, let last = lastFix {
            periodMaxM = max(periodMaxM, 0)
            endPeriod(at: last.atMs, &events)
        } else {
            state = .onCourse
            farFixes = 0
            backFixes = 0
            pendingStartMs = nil
            jumpFixes = 0
            jumpAlong = nil
        }
        // Cues skipped by the jump are not announced.
        nextCue = course.firstCue(atOrAfterM: along - settings.cuePassedM)
        cueStage = .none
        view.backBearingDeg = nil
        view.backDistanceM = nil
        return true
    }

    /// The distances along of the course's previous and next passes, going the same way, of the
    /// place where the rider was last on it (`lastOnAlong`): within `jumpDistanceM` of that
    /// point, in a direction within `lapAngleDeg` of the rider's there, more than `jumpExcludeM`
    /// along from it. (-infinity, infinity) when there are none or the rider has not been on
    /// the course yet. On a lapped course a rider who leaves lap 1 onto a road the later laps
    /// use is near lap 2 and lap 3 there too (the nearer of them alternated with the fixes'
    /// noise, and a jump onto one said "finished" a lap or two early); the distance ridden puts
    /// the rider on lap 1, off course, until its own road comes back; and a rider who leaves
    /// lap 2 onto lap 1's road is on lap 2. Found once per place (two walks of the course; no
    /// allocation).
    mutating func laps() -> (behind: Double, ahead: Double) {
        guard let from = lastOnAlong else { return (-Double.infinity, .infinity) }
        if lapsFor == from { return (lapBehindAlong, lapAheadAlong) }
        lapsFor = from
        let p = course.position(atAlongM: from)
        let plane = LocalPlane(latDeg: p.latDeg, lonDeg: p.lonDeg)
        lapAheadAlong = .infinity
        var i = course.segment(atAlongM: from + settings.jumpExcludeM)
        while i < course.pointCount - 1 {
            if let a = lapPass(i, plane, from: from), a > from { lapAheadAlong = a; break }
            i += 1
        }
        lapBehindAlong = -Double.infinity
        i = course.segment(atAlongM: from - settings.jumpExcludeM)
        while i >= 0 {
            if let a = lapPass(i, plane, from: from), a < from { lapBehindAlong = a; break }
            i -= 1
        }
        assert(lapBehindAlong < from && lapAheadAlong > from, "the other laps' passes are behind and ahead of the place")
        return (lapBehindAlong, lapAheadAlong)
    }

    /// Segment i's distance along where it passes the place `from` (the origin of `plane`) again
    /// going the rider's way there (`lastOnBearing`), if it does (`laps`).
    func lapPass(_ i: Int, _ plane: LocalPlane, from: Double) -> Double? {
        let r = settings.jumpDistanceM
        let a = plane.offset(latDeg: course.latDeg[i], lonDeg: course.lonDeg[i])
        let b = plane.offset(latDeg: course.latDeg[i + 1], lonDeg: course.lonDeg[i + 1])
        if (a.east > r && b.east > r) || (a.east < -r && b.east < -r) || (a.north > r && b.north > r) || (a.north < -r && b.north < -r) {
            return nil
        }
        let m = project(i, plane)
        guard m.distanceM <= r, abs(m.alongM - from) > settings.jumpExcludeM,
              abs(Bearing.turn(from: lastOnBearing, to: Double(course.bearingDeg[i]))) <= settings.lapAngleDeg else { return nil }
        return m.alongM
    }

    /// Bearing and distance from the rider to `m` (the nearest point of the course ahead), or
    /// nothing.
    mutating func pointBack(_ m: Match?, _ plane: LocalPlane) {
        guard let m else { view.backBearingDeg = nil; view.backDistanceM = nil; return }
        view.backBearingDeg = Bearing.of(east: m.east, north: m.north)
        view.backDistanceM = m.distanceM
        if state == .acquiring { view.offsetM = m.distanceM }
    }

    // MARK: Matching

    /// The segment (a, b) relative to the fix: the nearest point on it and its distance.
    @inline(__always)
    func project(_ i: Int, _ plane: LocalPlane) -> Match {
        let a = plane.offset(latDeg: course.latDeg[i], lonDeg: course.lonDeg[i])
        let b = plane.offset(latDeg: course.latDeg[i + 1], lonDeg: course.lonDeg[i + 1])
        let dx = b.east - a.east, dy = b.north - a.north
        let len2 = dx * dx + dy * dy
        var t = len2 > 0 ? -(a.east * dx + a.north * dy) / len2 : 0
        t = max(0, min(1, t))
        let px = a.east + t * dx, py = a.north + t * dy
        let along = course.alongM[i] + t * (course.alongM[i + 1] - course.alongM[i])
        return Match(segment: i, alongM: along, distanceM: (px * px + py * py).squareRoot(), east: px, north: py)
    }

    /// The best match inside the window around the last one: the nearest point, each metre
    /// away from where the rider is expected (`predicted`) beyond the slack costing
    /// `alongWeight`, a segment pointing away from the heading `headingPenaltyM`.
    /// The window's best match (distance plus the along and heading costs), and the window's
    /// nearest distance to the fix (what an off-course period's farthest distance keeps: how far
    /// the rider was from the course, not from the place the costs preferred).
    func matchInWindow(_ plane: LocalPlane, predicted: Double, extraAheadM: Double, backwards: Bool,
                       within bounds: (lo: Double, hi: Double)) -> (Match, nearestM: Double) {
        let lo = course.segment(atAlongM: max(bounds.lo, along - settings.windowBackM - (backwards ? extraAheadM : 0)))
        var hi = course.segment(atAlongM: min(bounds.hi, along + settings.windowAheadM + extraAheadM))
        if hi < lo { hi = lo }
        let slack = settings.alongSlackM + abs(predicted - along)
        var best = project(segment, plane)
        var bestScore = Double.infinity
        var nearestM = Double.infinity
        for i in lo...hi {
            let m = project(i, plane)
            nearestM = min(nearestM, m.distanceM)
            var score = m.distanceM + settings.alongWeight * max(0, abs(m.alongM - predicted) - slack)
            if !backwards, let h = heading, abs(Bearing.turn(from: Double(course.bearingDeg[i]), to: h)) > 90 {
                score += settings.headingPenaltyM
            }
            if score < bestScore {
                bestScore = score
                best = m
            }
        }
        assert(!(nearestM > best.distanceM), "the nearest in the window is no farther than the best match in it")
        return (best, nearestM)
    }

    /// Searches the whole course: the places where it passes within `within` of the fix (one per
    /// pass: the nearest point of each run of segments within it), going the rider's way when the
    /// heading is known, at least `jumpExcludeM` along the course from `awayFrom` if given, and
    /// between `after` and `before` (not on another lap: `laps`).
    /// `best`: the pass with the lowest distance along (`preferLowestAlong`, the first lock) or
    /// the nearest; `nearest`: the nearest point of the whole course.
    mutating func searchCourse(_ plane: LocalPlane, within: Double, preferLowestAlong: Bool,
                               awayFrom: Double? = nil, after: Double = -Double.infinity, before: Double = .infinity) -> (best: Match?, nearest: Match?, bestAgainst: Match?) {
        globalSearches &+= 1
        var best: Match?
        var bestAgainst: Match?
        var nearest: Match?
        var run: Match?
        let n = course.pointCount
        func closeRun(_ r: Match?) {
            guard let r else { return }
            if let a = awayFrom, abs(r.alongM - a) < settings.jumpExcludeM { return }
            if r.alongM >= before || r.alongM <= after { return }
            if let h = heading, abs(Bearing.turn(from: Double(course.bearingDeg[r.segment]), to: h)) > 90 {
                if bestAgainst == nil || r.alongM < bestAgainst!.alongM { bestAgainst = r }
                return
            }
            if let b = best {
                if preferLowestAlong ? r.alongM < b.alongM : r.distanceM < b.distanceM { best = r }
            } else {
                best = r
            }
        }
        // A cheap box test first: a segment with both ends on the same side beyond both
        // `within` and the nearest distance so far can be neither.
        var nearestDistance = Double.infinity
        for i in 0..<(n - 1) {
            let a = plane.offset(latDeg: course.latDeg[i], lonDeg: course.lonDeg[i])
            let b = plane.offset(latDeg: course.latDeg[i + 1], lonDeg: course.lonDeg[i + 1])
            let box = Swift.max(within, nearestDistance)
            if (a.east > box && b.east > box) || (a.east < -box && b.east < -box)
                || (a.north > box && b.north > box) || (a.north < -box && b.north < -box) {
                closeRun(run)
                run = nil
                continue
            }
            let m = project(i, plane)
            if m.distanceM < nearestDistance {
                nearestDistance = m.distanceM
                nearest = m
            }
            if m.distanceM <= within {
                if run == nil || m.distanceM < run!.distanceM { run = m }
            } else {
                closeRun(run)
                run = nil
            }
        }
        closeRun(run)
        return (best, nearest, bestAgainst)
    }

    // MARK: Figures, cues, climbs

    mutating func refreshFigures() {
        guard state != .acquiring else {
            view.state = .acquiring
            return
        }
        view.state = state
        view.alongM = along
        let toGo = max(0, course.lengthM - along)
        view.distanceToGoM = toGo
        view.secondsToGo = movingMs >= 60_000 && movingM > 0 ? toGo / (movingM * 1000 / Double(movingMs)) : nil
        view.ascentToGoM = course.hasAltitude ? max(0, course.totalAscentM - course.ascent(atAlongM: along)) : nil
    }

    mutating func announceCues(speed: Double, alarms: Bool, _ events: inout NavigationEvents) {
        let cues = course.cues
        // Cues passed (the rider is `cuePassedM` beyond them) give way to the next.
        while nextCue < cues.count, along >= cues[nextCue].alongM + settings.cuePassedM {
            nextCue += 1
            cueStage = .none
        }
        guard nextCue < cues.count else {
            view.cue = nil
            view.followingCue = nil
            return
        }
        let cue = cues[nextCue]
        let d = max(0, cue.alongM - along)
        let first = max(settings.cueFirstMinM, min(settings.cueFirstMaxM, speed * settings.cueFirstS))
        let approach = max(settings.cueApproachM, speed * settings.cueApproachS)
        var due = CueStage.none
        if d <= settings.cueNowM { due = .now } else if d <= approach { due = .approach } else if d <= first { due = .first }
        if due > cueStage {
            if alarms { events.cue = CueAnnouncement(index: nextCue, stage: due, distanceM: d) }
            cueStage = due
        }
        view.cue = CueView(index: nextCue, type: cue.type, name: cue.name, distanceM: d, stage: cueStage)
        if nextCue + 1 < cues.count, cues[nextCue + 1].alongM - cue.alongM <= settings.closeCuesM {
            let c2 = cues[nextCue + 1]
            view.followingCue = CueView(index: nextCue + 1, type: c2.type, name: c2.name, distanceM: c2.alongM - along, stage: .none)
        } else {
            view.followingCue = nil
        }
    }

    mutating func refreshClimb(_ events: inout NavigationEvents) {
        let climbs = course.climbs
        let a = state == .acquiring ? 0 : along
        var index: Int?
        var ahead: Int?
        for (i, c) in climbs.enumerated() {
            if a >= c.startAlongM && a < c.endAlongM { index = i; break }
            if c.startAlongM > a { ahead = i; break }
        }
        if let i = index {
            if climbIndex != i, state == .onCourse { events.climbStarted = i }
            climbIndex = i
            let c = climbs[i]
            let toTop = c.endAlongM - a
            let elevation = c.endAltitudeM - (course.altitude(atAlongM: a) ?? c.startAltitudeM)
            view.climb = ClimbView(number: i + 1, count: climbs.count, onClimb: true, distanceM: toTop, elevationM: elevation,
                                   gradePercent: toTop > 0 ? 100 * elevation / toTop : 0, lengthM: c.lengthM)
        } else {
            climbIndex = nil
            if let i = ahead {
                let c = climbs[i]
                view.climb = ClimbView(number: i + 1, count: climbs.count, onClimb: false, distanceM: c.startAlongM - a,
                                       elevationM: c.gainM, gradePercent: c.gradePercent, lengthM: c.lengthM)
            } else {
                view.climb = nil
            }
        }
    }

    mutating func refreshClimb() {
        var ignored = NavigationEvents()
        refreshClimb(&ignored)
    }

    /// The ride ended (or the course was cleared) while off course: the open period, closed now.
    public mutating func closeOpenPeriod(at atMs: Int64) -> OffCoursePeriod? {
        guard state == .offCourse || state == .wrongWay else { return nil }
        let p = OffCoursePeriod(startMs: periodStartMs, endMs: atMs, alarmMs: periodAlarmMs, maxDistanceM: periodMaxM, wrongWay: state == .wrongWay)
        state = .onCourse
        view.state = .onCourse
        return p
    }
}
