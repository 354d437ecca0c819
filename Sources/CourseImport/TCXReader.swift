import Navigation

/// TCX (Garmin's Training Center Database v2): the first `Courses/Course` — its `Name`, its
/// `Track/Trackpoint`s with `Position` (`LatitudeDegrees`, `LongitudeDegrees`),
/// `AltitudeMeters` and `DistanceMeters`, and its `CoursePoint`s (`Name`, `Position`,
/// `PointType`, `Notes`) as cues in course order. A file with no course but an activity
/// (`Activities/Activity/Lap/Track`) gives the activity's track as the course (riding a ride
/// again). Trackpoints without a position (a lost fix) are left out.
enum TCXReader {
    static func read(_ xml: inout XMLCursor) throws(ReaderProblem) -> RawCourse {
        var raw = RawCourse(format: .tcx)
        var stack: [String] = []
        var text = ""
        var lat: Double?, lon: Double?, alt: Double?, dist: Double?
        var cueName = "", cueNotes = "", cueType = ""
        var courses = 0
        var courseName: String?
        var activityPoints: [RawCourse.Point] = []
        var pointCount = 0
        func inCourse() -> Bool { courses == 1 && stack.contains("Course") }
        while let e = try xml.next() {
            switch e {
            case .start(let name, _):
                stack.append(name)
                text = ""
                if name == "Course" && stack.count >= 2 && stack[stack.count - 2] == "Courses" { courses += 1 }
                if name == "Trackpoint" || name == "CoursePoint" {
                    lat = nil; lon = nil; alt = nil; dist = nil
                    cueName = ""; cueNotes = ""; cueType = ""
                }
            case .text(let t):
                if text.utf8.count < XMLTokenizer.Limits.textBytesMax { text += t }
            case .end(let name):
                let parent = stack.count >= 2 ? stack[stack.count - 2] : ""
                switch name {
                case "LatitudeDegrees" where parent == "Position": lat = XMLReading.number(text)
                case "LongitudeDegrees" where parent == "Position": lon = XMLReading.number(text)
                case "AltitudeMeters" where parent == "Trackpoint" || parent == "CoursePoint": alt = XMLReading.number(text)
                case "DistanceMeters" where parent == "Trackpoint": dist = XMLReading.number(text)
                case "Name" where parent == "CoursePoint": cueName = XMLReading.trimmed(text)
                case "Notes" where parent == "CoursePoint": cueNotes = XMLReading.trimmed(text)
                case "PointType" where parent == "CoursePoint": cueType = XMLReading.trimmed(text)
                case "Name" where parent == "Course" && courses == 1 && courseName == nil: courseName = XMLReading.trimmed(text)
                case "Trackpoint":
                    if lat != nil || lon != nil {
                        try XMLReading.checkCount(pointCount)
                        let (la, lo) = try XMLReading.point(lat, lon, index: pointCount)
                        pointCount += 1
                        let p = RawCourse.Point(latDeg: la, lonDeg: lo, altitudeM: alt, distanceM: dist)
                        if inCourse() { raw.points.append(p) } else if courses == 0 && stack.contains("Activity") { activityPoints.append(p) }
                    }
                case "CoursePoint" where inCourse():
                    let (la, lo) = try XMLReading.point(lat, lon, index: raw.cues.count)
                    raw.cues.append(RawCourse.RawCue(latDeg: la, lonDeg: lo, distanceM: nil, type: CueType(name: cueType) ?? .generic,
                                                     name: XMLReading.clipped(cueName, bytes: Course.cueNameBytesMax),
                                                     notes: XMLReading.clipped(cueNotes, bytes: Course.cueNotesBytesMax), ordered: true))
                default: break
                }
                stack.removeLast()
                text = ""
            }
        }
        if courses > 1 { raw.warnings.append("the file holds \(courses) courses: the first (\(courseName ?? "unnamed")) was imported") }
        if courses == 0 && !activityPoints.isEmpty {
            raw.points = activityPoints
            raw.warnings.append("the file holds an activity, not a course: its track is the course")
        }
        raw.name = courseName.flatMap { $0.isEmpty ? nil : $0 }
        return raw
    }
}
