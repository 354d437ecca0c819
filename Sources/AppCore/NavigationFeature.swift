import Navigation
import RideModel

/// Following a course (docs/navigation.md): the course loaded for the next ride or the ride in
/// progress, its follower fed by the 1 Hz records, the alarms and cues it raises, the off-course
/// periods kept in the ride's metadata, the Courses screen.
struct NavigationCore: Sendable {
    /// Off-course periods kept in a ride's metadata at most (more are counted).
    static let periodsMax = CourseMetadata.periodsMax

    /// The course chosen (for the next ride, or followed by the ride in progress).
    var course: Course?
    var follower: CourseFollower?
    /// The ride's off-course periods so far, ms from the ride's start.
    var periods: [OffCoursePeriod] = []
    var periodsDropped = 0
    /// The course a recovered ride followed (from its journal), to be loaded again.
    var recoveredCourseName: String?
    /// The Courses screen is open (idle only; its state is `screen.coursesMenu`).
    var menuOpen = false
}

extension AppCore {
    /// Metadata keys of a ride that followed a course (docs/rides.md).
    public static let courseNameKey = CourseMetadata.nameKey
    public static let courseLengthKey = CourseMetadata.lengthKey
    public static let courseOffCourseKey = CourseMetadata.offCourseKey
    public static let courseOffCourseDroppedKey = CourseMetadata.offCourseDroppedKey

    /// The course loaded now (for the next ride, or the ride in progress).
    public var course: Course? { navigation.course }
    /// The follower of the ride in progress.
    public var courseFollower: CourseFollower? { navigation.follower }
    /// The ride's off-course periods (ms from its start).
    public var offCoursePeriods: [OffCoursePeriod] { navigation.periods }

    /// The page the navigation pages start at: after the data pages.
    var navigationPage: Int { configuration.runningPageCount }
    /// Running pages the rider can reach: the data pages, then the navigation and profile pages
    /// while a course is loaded.
    var reachablePageCount: Int { configuration.runningPageCount + (navigation.course == nil ? 0 : NavigationPages.count) }

    // MARK: Commands

    mutating func loadCourse(_ c: Course, at now: MonotonicInstant) -> ActionOutcome {
        closeOffCoursePeriod(at: now)
        navigation.course = c
        navigation.recoveredCourseName = nil
        var following = ""
        if rideCollecting {
            startFollowing(c, at: now)
            runningPage = navigationPage
            following = "; following it now"
        } else {
            navigation.follower = nil
            following = "; the next ride follows it"
        }
        refreshNavigationScreen()
        screen.runningPageCount = reachablePageCount
        return .done("course \(c.name) loaded: \(CourseFigures.kilometres(c.lengthM)) km, \(c.cues.count) cues, \(c.climbs.count) climbs\(following)")
    }

    mutating func clearCourse(at now: MonotonicInstant) -> ActionOutcome {
        guard let c = navigation.course else { return .refused("no course is loaded") }
        closeOffCoursePeriod(at: now)
        navigation.course = nil
        navigation.follower = nil
        if runningPage >= configuration.runningPageCount { runningPage = 0 }
        refreshNavigationScreen()
        screen.runningPageCount = reachablePageCount
        return .done("course \(c.name) cleared")
    }

    func courseStatus() -> ActionOutcome {
        guard let c = navigation.course else { return .done("no course loaded") }
        guard let f = navigation.follower, rideCollecting else {
            return .done("course \(c.name): \(CourseFigures.kilometres(c.lengthM)) km, \(c.cues.count) cues, \(c.climbs.count) climbs; not followed until a ride starts")
        }
        let v = f.view
        var s = "course \(c.name): \(v.state)"
        if let a = v.alongM { s += ", \(CourseFigures.kilometres(a)) of \(CourseFigures.kilometres(c.lengthM)) km" }
        if let d = v.offsetM, v.state != .acquiring { s += ", \(Int(d.rounded())) m from it" }
        if let cue = v.cue { s += ", next \(cue.type.name) in \(Int(cue.distanceM.rounded())) m" }
        s += ", \(navigation.periods.count) off-course periods"
        return .done(s)
    }

    /// A ride starts (or a course is loaded during one): its follower starts, and the ride's
    /// metadata names the course.
    mutating func startFollowing(_ c: Course, at now: MonotonicInstant) {
        navigation.follower = CourseFollower(course: c)
        guard builder != nil else { return }
        if builder!.metadata.last(where: { $0.key == Self.courseNameKey })?.value != c.name {
            for (k, v) in [(Self.courseNameKey, c.name), (Self.courseLengthKey, CourseFigures.metres(c.lengthM))] {
                journal(.metadata(key: k, value: v))
                builder!.setMetadata(k, v)
            }
            emit(.syncJournal)
        }
    }

    /// At the start of a ride.
    mutating func navigationDidStartRide(at start: MonotonicInstant) {
        navigation.periods = []
        navigation.periodsDropped = 0
        navigation.recoveredCourseName = nil
        if let c = navigation.course {
            startFollowing(c, at: start)
            runningPage = navigationPage
        }
        refreshNavigationScreen()
    }

    /// The ride stopped: an open off-course period ends here; the follower is fed no more (it
    /// keeps where the ride ended, for the summary; the course stays loaded for the next ride).
    mutating func navigationDidFinishRide(at now: MonotonicInstant) {
        closeOffCoursePeriod(at: now)
    }

    mutating func refreshNavigationScreen() {
        if let f = navigation.follower {
            screen.navigation = f.view
        } else if let c = navigation.course {
            var v = NavigationView(course: c)
            v.distanceToGoM = c.lengthM
            v.ascentToGoM = c.hasAltitude ? c.totalAscentM : nil
            screen.navigation = v
        } else {
            screen.navigation = NavigationView()
        }
    }

    // MARK: Fixes

    /// After a live 1 Hz record: its position (or its lack) to the follower; alarms, cues and
    /// climbs as overlays; a period that ended into the ride's metadata.
    mutating func followCourse(at instant: MonotonicInstant) {
        guard navigation.follower != nil else { return }
        guard let lat = recordValues.latitude, let lon = recordValues.longitude else {
            navigation.follower!.noFix(at: instant.milliseconds)
            screen.navigation = navigation.follower!.view
            return
        }
        let running = lifecycle.state == .running
        let e = navigation.follower!.update(NavigationFix(latDeg: lat, lonDeg: lon, atMs: instant.milliseconds, speedMps: recordValues.speed),
                                            alarms: running)
        screen.navigation = navigation.follower!.view
        guard !e.isEmpty else { return }
        if e.offCourse || e.wrongWay {
            runningPage = navigationPage
            showOverlay(e.wrongWay ? .wrongWay : .offCourse, at: instant)
        }
        if let p = e.backOnCourse {
            keepOffCoursePeriod(p)
            showOverlay(.backOnCourse, at: instant)
        }
        if let cue = e.cue, let c = navigation.course, cue.index < c.cues.count {
            let q = c.cues[cue.index]
            showOverlay(.cue(q.type, stage: cue.stage, distanceM: Int(cue.distanceM.rounded()), name: q.name), at: instant)
        }
        if let k = e.climbStarted, let v = navigation.follower!.view.climb, e.cue == nil {
            _ = k
            showOverlay(.climbStart(number: v.number, count: v.count, lengthM: Int(v.distanceM.rounded()),
                                    gradeTenths: Int((v.gradePercent * 10).rounded())), at: instant)
        }
        if e.finished { showOverlay(.courseFinished, at: instant) }
    }

    /// An open off-course period ends at `now` (the ride stops, the course changes).
    mutating func closeOffCoursePeriod(at now: MonotonicInstant) {
        guard navigation.follower != nil, let p = navigation.follower!.closeOpenPeriod(at: now.milliseconds) else { return }
        keepOffCoursePeriod(p)
    }

    /// Keeps a period in the ride's metadata (journaled: recovery keeps it).
    mutating func keepOffCoursePeriod(_ p: OffCoursePeriod) {
        guard let start = builder?.startInstant, header != nil else { return }
        var rel = p
        rel.maxDistanceM = p.maxDistanceM.rounded() // as the metadata keeps it
        rel.startMs -= start.milliseconds
        rel.endMs -= start.milliseconds
        rel.alarmMs -= start.milliseconds
        guard navigation.periods.count < NavigationCore.periodsMax else {
            navigation.periodsDropped += 1
            let v = String(navigation.periodsDropped)
            journal(.metadata(key: Self.courseOffCourseDroppedKey, value: v))
            builder?.setMetadata(Self.courseOffCourseDroppedKey, v)
            return
        }
        navigation.periods.append(rel)
        let value = Self.encodePeriods(navigation.periods)
        journal(.metadata(key: Self.courseOffCourseKey, value: value))
        builder?.setMetadata(Self.courseOffCourseKey, value)
    }

    /// A journaled navigation metadata record, replayed.
    mutating func replayNavigationMetadata(key: String, value: String) {
        switch key {
        case Self.courseNameKey: navigation.recoveredCourseName = value
        case Self.courseOffCourseKey: navigation.periods = Self.decodePeriods(value)
        case Self.courseOffCourseDroppedKey: navigation.periodsDropped = Int(value) ?? 0
        default: break
        }
    }

    public static func encodePeriods(_ periods: [OffCoursePeriod]) -> String {
        CourseMetadata.encode(periods)
    }

    /// The periods of `course.off_course` (malformed entries are left out).
    public static func decodePeriods(_ value: String) -> [OffCoursePeriod] {
        CourseMetadata.decode(value)
    }

    // MARK: The Courses screen

    mutating func openCourses(at now: MonotonicInstant) {
        navigation.menuOpen = true
        screen.coursesMenu = CoursesMenu()
        screen.coursesMenu.loading = true
        emit(.courses(.list))
    }

    mutating func closeCourses() {
        navigation.menuOpen = false
        screen.coursesMenu = CoursesMenu()
    }

    mutating func coursesPress(_ b: Button, at now: MonotonicInstant) {
        switch screen.coursesMenu.press(b, course: navigation.course) {
        case .none: break
        case .close: closeCourses()
        case .clear:
            _ = clearCourse(at: now)
            screen.coursesMenu.say("NO COURSE", at: now)
        case .load(let name):
            screen.coursesMenu.say("LOADING", at: now)
            emit(.courses(.load(name)))
        }
    }

    /// The device's answer to the Courses screen or a recovered ride's course.
    mutating func handleCoursesUpdate(_ u: CoursesUpdate, at now: MonotonicInstant) {
        switch u {
        case .listed(let list):
            screen.coursesMenu.listed(list)
        case .loaded(let c):
            _ = loadCourse(c, at: now)
            if navigation.menuOpen {
                screen.coursesMenu.page = .course
                screen.coursesMenu.climbRow = 0
                screen.coursesMenu.say("LOADED", at: now)
            }
        case .failed(let why):
            if navigation.menuOpen { screen.coursesMenu.say(why, at: now) }
        }
    }
}

/// Numbers as the navigation's words write them.
enum CourseFigures {
    /// "12.3"
    static func kilometres(_ m: Double) -> String {
        let tenths = Int((m / 100).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    static func metres(_ m: Double) -> String { String(Int(m.rounded())) }
}

/// The navigation pages after the data pages while a course is loaded: NAV (the cue, or the way
/// back), PROFILE (the course ahead, the climb).
public enum NavigationPages {
    public static let count = 2
}
