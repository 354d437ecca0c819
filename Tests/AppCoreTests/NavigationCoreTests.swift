import AppCore
import Navigation
import RideModel
import Testing

/// Following a course in the app core (docs/navigation.md): loading, the follower fed by the 1 Hz
/// records, alarms and cues as overlays (the buzzer sounding), the off-course periods in the
/// ride's journaled metadata and back after a crash, the Courses screen.
@Suite struct NavigationCoreTests {
    static let degPerM = 1 / 111_200.0

    /// 4 km due north from 46° N 7° E, a right turn cue at 2 km.
    static func course(_ name: String = "North") throws -> Course {
        var lat: [Int32] = [], lon: [Int32] = []
        for k in 0...200 {
            lat.append(Course.quantised(46 + Double(k) * 20 * degPerM)!)
            lon.append(70_000_000)
        }
        return try Course(name: name, latE7: lat, lonE7: lon, altitudeM: Array(repeating: .nan, count: 201),
                          cues: [Cue(alongM: 2_000, type: .right, name: "Rue du Lac")], climbs: [])
    }

    struct Ride {
        var core = AppCore(randomSeed: 5)
        var records: [RideRecord] = []
        var effects: [AppEffect] = []
        var now = MonotonicInstant.zero

        mutating func handle(_ i: AppInput) {
            core.handle(i)
            while let e = core.drainEffect() {
                effects.append(e)
                if case .journal(let r) = e { records.append(r) }
            }
        }

        mutating func start() {
            handle(.sensor(SensorStatus(.gps, .connected), at: now))
            handle(.command(.start, at: now))
            now = MonotonicInstant(milliseconds: 3_000)
            handle(.tick(now))
        }

        /// Second k of riding north at 8 m/s, `eastM` off the course's line.
        mutating func second(_ k: Int, eastM: Double = 0, northM: Double? = nil) {
            let base = 3_000 + Int64(k) * 1000
            let at = MonotonicInstant(milliseconds: base + 200)
            let north = northM ?? Double(k) * 8
            handle(.sample(Sample(.latitude, 46 + north * NavigationCoreTests.degPerM, at: at)))
            handle(.sample(Sample(.longitude, 7 + eastM * NavigationCoreTests.degPerM / 0.6947, at: at)))
            handle(.sample(Sample(.speed, 8, at: at)))
            now = MonotonicInstant(milliseconds: base + 1000)
            handle(.tick(now))
        }

        var alerts: [Alert] { effects.compactMap { if case .alert(let a) = $0 { a } else { nil } } }
        func metadata(_ key: String) -> String? {
            records.compactMap { if case .metadata(let k, let v) = $0, k == key { v } else { nil } }.last
        }
    }

    @Test func aCourseLoadedBeforeTheRideIsFollowedFromItsStart() throws {
        var r = Ride()
        let c = try Self.course()
        r.handle(.command(.loadCourse(c), at: r.now))
        let reply = r.effects.compactMap { if case .reply(let x) = $0 { x } else { nil } }.last
        #expect(reply?.ok == true && reply!.message.contains("the next ride follows it"))
        #expect(r.core.screen.runningPageCount == 3 + NavigationPages.count)
        r.start()
        #expect(r.core.screen.mode == .running(page: 3), "the navigation page first")
        #expect(r.metadata(AppCore.courseNameKey) == "North")
        for k in 0..<260 { r.second(k) }
        let v = r.core.screen.navigation
        #expect(v.state == .onCourse)
        #expect(abs(v.alongM! - 259 * 8) < 10)
        // The cue at 2 km was announced before it, with the approach beep.
        let cues = r.alerts.compactMap { if case .cue(_, let stage, let d, _) = $0 { (stage, d) } else { nil } }
        #expect(cues.map(\.0) == [.first, .approach, .now], "\(cues)")
        #expect(cues[0].1 <= 240 && cues[1].1 <= 120 && cues[2].1 <= 25)
        #expect(r.alerts.contains { $0.sounds && { if case .cue = $0 { true } else { false } }($0) })
        #expect(!r.alerts.contains(.offCourse))
        // PAGE goes round the data pages and the two navigation pages.
        var pages: [ScreenMode] = []
        for _ in 0..<5 {
            r.handle(.button(ButtonEvent(.page, .down, at: r.now)))
            r.handle(.button(ButtonEvent(.page, .up, at: r.now)))
            pages.append(r.core.screen.mode)
        }
        #expect(pages == [.running(page: 4), .running(page: 0), .running(page: 1), .running(page: 2), .running(page: 3)])
    }

    /// A detour 300 m east: OFF COURSE (sounding) within seconds of passing 50 m, the navigation
    /// page shown; BACK ON COURSE after; the period journaled, in the FIT-bound metadata, and
    /// rebuilt from the journal after a crash, which asks for the course again.
    @Test func aDetourIsAlarmedKeptAndRecovered() throws {
        var r = Ride()
        r.handle(.command(.loadCourse(try Self.course()), at: r.now))
        r.start()
        for k in 0..<60 { r.second(k) }
        r.handle(.button(ButtonEvent(.page, .down, at: r.now)))
        r.handle(.button(ButtonEvent(.page, .up, at: r.now)))
        #expect(r.core.screen.mode == .running(page: 4))
        var alarmAt: Int?
        for k in 60..<160 {
            let out = k < 110 ? Double(k - 60) * 6 : Double(160 - k) * 6  // out to 300 m and back
            r.second(k, eastM: min(300, out), northM: 480)
            if alarmAt == nil, r.alerts.contains(.offCourse) { alarmAt = k }
        }
        // Rejoined: riding on along the course.
        for k in 160..<180 { r.second(k, northM: 480 + Double(k - 160) * 8) }
        let first = 60 + 9 // 54 m at second 69
        #expect(alarmAt.map { $0 >= first && $0 - first <= 10 } ?? false, "alarm at \(String(describing: alarmAt))")
        #expect(r.alerts.contains(.offCourse) && Alert.offCourse.sounds)
        #expect(r.alerts.contains(.backOnCourse))
        let periods = AppCore.decodePeriods(r.metadata(AppCore.courseOffCourseKey) ?? "")
        #expect(periods.count == 1)
        #expect(abs(periods[0].maxDistanceM - 300) < 5 && periods[0].startMs > 60_000 && periods[0].endMs > periods[0].startMs)
        // A crash: a fresh core replays the journal.
        var recovered = AppCore(randomSeed: 9)
        for rec in r.records { recovered.replay(rec) }
        recovered.finishRecovery(deviceNow: .zero, gapMs: 0)
        #expect(recovered.offCoursePeriods == r.core.offCoursePeriods)
        var asked: [CoursesRequest] = []
        while let e = recovered.drainEffect() { if case .courses(let q) = e { asked.append(q) } }
        #expect(asked == [.load("North")])
    }

    /// Standing off the course (a café 80 m away, paused or at walking pace) is no alarm; a
    /// lost fix is none either.
    @Test func noAlarmWhileStandingPausedOrWithoutAFix() throws {
        var r = Ride()
        r.handle(.command(.loadCourse(try Self.course()), at: r.now))
        r.start()
        for k in 0..<30 { r.second(k) }
        r.handle(.command(.pause, at: r.now))
        for k in 30..<90 { r.second(k, eastM: 80, northM: 240) }
        r.handle(.command(.resume, at: r.now))
        for k in 90..<100 { r.second(k, eastM: 0, northM: 240 + Double(k - 90) * 8) }
        for k in 100..<160 {
            // No position for a minute.
            r.now = MonotonicInstant(milliseconds: 3_000 + Int64(k) * 1000 + 1000)
            r.handle(.tick(r.now))
        }
        #expect(r.core.screen.navigation.gpsLost)
        for k in 160..<170 { r.second(k, eastM: 0, northM: 320 + Double(k - 160) * 8) }
        #expect(!r.alerts.contains(.offCourse) && !r.alerts.contains(.wrongWay))
    }

    /// The Courses screen: LAP on idle asks for the list; PAGE moves, LAP loads the course and
    /// shows its page; LAP back to the list, START back to idle; NO COURSE clears it.
    @Test func theCoursesScreen() throws {
        var r = Ride()
        func press(_ b: Button) {
            r.handle(.button(ButtonEvent(b, .down, at: r.now)))
            r.handle(.button(ButtonEvent(b, .up, at: r.now)))
        }
        press(.lap)
        #expect(r.core.screen.mode == .courses)
        #expect(r.effects.contains(.courses(.list)))
        r.handle(.courses(.listed([CourseListing(name: "north", lengthM: 4_000, ascentM: nil, cueCount: 1, climbCount: 0)]), at: r.now))
        press(.page)
        #expect(r.core.screen.coursesMenu.cursor == 1)
        press(.lap)
        #expect(r.effects.contains(.courses(.load("north"))))
        r.handle(.courses(.loaded(try Self.course()), at: r.now))
        #expect(r.core.course?.name == "North" && r.core.screen.coursesMenu.page == .course)
        press(.lap)
        press(.page) // back on NO COURSE
        press(.lap)
        #expect(r.core.course == nil)
        press(.startPause)
        #expect(r.core.screen.mode == .idle)
        // A failed load says why.
        press(.lap)
        r.handle(.courses(.failed("DAMAGED"), at: r.now))
        #expect(r.core.screen.coursesMenu.message == "DAMAGED")
    }
}
