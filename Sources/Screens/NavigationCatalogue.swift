import AppCore
import Navigation
import Positioning
import RideModel

extension ScreenCatalogue {
    /// A made-up 21 km course near the catalogue's track: north along a valley road, a named
    /// right turn and a left 120 m after it, a 2.4 km climb at 6.5 %, a hairpin, back south to a
    /// water stop and the finish. Its views come from the real follower fed positions along it.
    public static func course() -> Course {
        let plane = LocalPlane(latDeg: 47.05, lonDeg: 8.31)
        let corners: [(Double, Double)] = [(0, 0), (0, 3_000), (1_500, 3_000), (1_500, 3_120), (2_900, 4_800), (3_300, 6_200),
                                           (3_250, 6_400), (4_200, 5_000), (4_600, 1_200), (2_000, 200), (300, -200)]
        var lat: [Int32] = [], lon: [Int32] = [], alt: [Float] = []
        var along = 0.0
        for k in 1..<corners.count {
            let (e0, n0) = corners[k - 1], (e1, n1) = corners[k]
            let length = ((e1 - e0) * (e1 - e0) + (n1 - n0) * (n1 - n0)).squareRoot()
            let steps = max(1, Int(length / 40))
            for s in (k == 1 ? 0 : 1)...steps {
                let t = Double(s) / Double(steps)
                let a = along + t * length
                let p = plane.point(east: e0 + t * (e1 - e0), north: n0 + t * (n1 - n0))
                lat.append(Course.quantised(p.latDeg)!)
                lon.append(Course.quantised(p.lonDeg)!)
                // 420 m in the valley, a climb from 4.6 km to 7.0 km, a long descent home.
                let climb = min(1, max(0, (a - 4_600) / 2_400))
                let descent = min(1, max(0, (a - 7_600) / 9_000))
                alt.append(Float(420 + 156 * climb - 150 * descent + 3 * cosine(a / 300)))
            }
            along += length
        }
        let cues = [Cue(alongM: 3_000, type: .right, name: "Rue du Lac"), Cue(alongM: 4_500, type: .left, name: "Chemin du Col"),
                    Cue(alongM: 7_000, type: .summit, name: "Col du Test"), Cue(alongM: 7_206, type: .sharpRight),
                    Cue(alongM: 14_800, type: .water, name: "Fontaine"), Cue(alongM: 17_550, type: .right, name: "Grand-Rue")]
        let climbs = [Climb(startAlongM: 4_600, endAlongM: 7_000, startAltitudeM: 420, endAltitudeM: 576),
                      Climb(startAlongM: 9_000, endAlongM: 9_700, startAltitudeM: 553, endAltitudeM: 575)]
        do {
            return try Course(name: "Col du Test", latE7: lat, lonE7: lon, altitudeM: alt, cues: cues, climbs: climbs)
        } catch {
            preconditionFailure("the catalogue's course is a valid course: \(error)")
        }
    }

    /// The follower after riding `course` to `alongM` at 7 m/s (then `then` more fixes, offsets
    /// from the course in metres east/north of where it is).
    static func followed(_ course: Course, toAlongM alongM: Double, then extra: [(Double, Double)] = []) -> CourseFollower {
        var f = CourseFollower(course: course)
        var t: Int64 = 0
        var a = 0.0
        while a <= alongM {
            let p = course.position(atAlongM: a)
            _ = f.update(NavigationFix(latDeg: p.latDeg, lonDeg: p.lonDeg, atMs: t, speedMps: 7), alarms: true)
            a += 7
            t += 1_000
        }
        let here = course.position(atAlongM: alongM)
        let plane = LocalPlane(latDeg: here.latDeg, lonDeg: here.lonDeg)
        for (e, n) in extra {
            let p = plane.point(east: e, north: n)
            t += 1_000
            _ = f.update(NavigationFix(latDeg: p.latDeg, lonDeg: p.lonDeg, atMs: t, speedMps: 7), alarms: true)
        }
        return f
    }

    /// The navigation pages, the map with a course, the Courses screen and the navigation alerts.
    static func navigationEntries(ride: ScreenModel, idle: ScreenModel) -> [Entry] {
        var out: [Entry] = []
        func add(_ name: String, _ caption: String, height: Int = 64, _ model: ScreenModel) {
            out.append(Entry(name: name, caption: caption, height: height, model: model))
        }
        let course = Self.course()
        var r = ride
        r.runningPageCount = 7
        r.sensors[Int(SensorRole.gps.rawValue)] = .connected
        r.gps = GpsStatus(mode: .fix3D, satellitesUsed: 9, satellitesVisible: 12)
        let nav = 5, profile = 6, map = 4
        func at(_ alongM: Double, page: Int, then extra: [(Double, Double)] = []) -> ScreenModel {
            var m = r
            let f = followed(course, toAlongM: alongM, then: extra)
            m.navigation = f.view
            m.navigation.secondsToGo = m.navigation.distanceToGoM.map { $0 / 7.9 }
            m.mode = .running(page: page)
            return m
        }
        add("nav-cue", "Navigation page: the next cue's arrow, distance and name; the distance and time to go (at the ride's average moving speed)",
            at(2_830, page: nav))
        add("nav-cue-then", "Navigation page at a turn (NOW) with the next cue close after it (THEN LEFT 120 M)", at(2_985, page: nav))
        add("nav-water", "Navigation page: a cue that is not a turn (a water stop) shows its word", at(14_650, page: nav))
        // Off course: 70 m along the course, then 200 m out to the east-north-east, moving away.
        let away: [(Double, Double)] = (1...28).map { k in (Double(k) * 7, Double(k) * 2) }
        add("nav-off-course", "Off course (more than 50 m from it for 3 fixes): the way back, relative to the rider's heading, and how far",
            at(1_000, page: nav, then: away))
        let back: [(Double, Double)] = (1...12).map { k in (0, -Double(k) * 7) }
        add("nav-wrong-way", "Wrong way: riding against the course for 5 s; the arrow points back along it", at(1_500, page: nav, then: back))
        var acquiring = r
        var f = CourseFollower(course: course)
        let start = LocalPlane(latDeg: 47.05, lonDeg: 8.31).point(east: -900, north: -1_400)
        _ = f.update(NavigationFix(latDeg: start.latDeg, lonDeg: start.lonDeg, atMs: 0, speedMps: 0), alarms: true)
        acquiring.navigation = f.view
        acquiring.mode = .running(page: nav)
        add("nav-to-course", "Before the first lock (riding to the course): no alarm, the way to the course (north up while standing)", acquiring)
        var waiting = r
        waiting.navigation = CourseFollower(course: course).view
        waiting.gps = GpsStatus(mode: .noFix, satellitesUsed: 2, satellitesVisible: 7)
        waiting.mode = .running(page: nav)
        add("nav-no-fix", "Navigation page before the first fix", waiting)
        add("nav-finished", "At the end of the course", at(course.lengthM - 5, page: nav))
        add("nav-profile-climb", "Course profile on a climb (ClimbPro-like): climb n of N, distance and elevation to the top, the mean grade left; the climb filled, the rider inverted",
            at(5_400, page: profile))
        add("nav-profile-ahead", "Course profile before a climb: how far to its foot, its gain and grade; the next 5 km", at(3_400, page: profile))
        add("nav-map-course", "The map page with a course: the course around the rider (north up, zoomed to the next cue), the track so far dotted, the rider's heading, the next cue circled",
            at(2_800, page: map))
        // The rear radar's column on the navigation pages, as on the data pages.
        for (name, caption, page, alongM) in [("radar-nav", "Navigation page with a rear radar: the column at the left, the cue beside it", nav, 2_830.0),
                                              ("radar-nav-profile", "Course profile with a rear radar: the column at the left, the profile beside it", profile, 5_400)] {
            var m = at(alongM, page: page)
            m.sensors[Int(SensorRole.radar.rawValue)] = .connected
            m.radar = RadarPicture([RadarTarget(rangeM: 62, closingSpeedMps: 8, threat: .approaching),
                                    RadarTarget(rangeM: 28, closingSpeedMps: 14, threat: .fastApproach)])
            add(name, caption, m)
        }

        var menu = idle
        menu.mode = .courses
        menu.coursesMenu.listed([
            CourseListing(name: "Col du Test", lengthM: course.lengthM, ascentM: course.totalAscentM, cueCount: 6, climbCount: 2),
            CourseListing(name: "Lakeside loop", lengthM: 42_300, ascentM: 180, cueCount: 31, climbCount: 0),
            CourseListing(name: "Brevet 300", lengthM: 301_200, ascentM: 3_410, cueCount: 412, climbCount: 23),
        ])
        menu.coursesMenu.cursor = 1
        menu.navigation = NavigationView(course: course)
        add("courses", "Courses (LAP on idle): the courses on the card, the loaded one marked; PAGE moves, LAP loads, START goes back", menu)
        var page = menu
        page.coursesMenu.page = .course
        add("courses-course", "Courses: the loaded course before the ride: length, ascent, cues, its climbs (length, grade, where); PAGE scrolls them", page)

        let alerts: [(String, Alert, String)] = [
            ("off-course", .offCourse, "Off course (buzzer)"), ("wrong-way", .wrongWay, "Wrong way (buzzer)"),
            ("back-on-course", .backOnCourse, "Back on course, said once"),
            ("cue", .cue(.right, stage: .approach, distanceM: 100, name: "Rue du Lac"), "A cue's approach, 100 m or 15 s before (beep)"),
            ("cue-now", .cue(.sharpLeft, stage: .now, distanceM: 12, name: ""), "A cue at the turn (beep)"),
            ("climb", .climbStart(number: 1, count: 2, lengthM: 2_400, gradeTenths: 65), "At the foot of a climb"),
            ("course-done", .courseFinished, "The end of the course"),
        ]
        for (name, alert, caption) in alerts {
            var a = at(2_830, page: 0)
            a.overlay = alert
            add("alert-\(name)", "Alert overlay: \(caption)", a)
        }
        // Every entry is drawn at 128x32 and 400x240 too (ScreenCatalogue's sizes).
        return out
    }
}
