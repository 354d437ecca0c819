import Navigation
import RideFiles

/// FIT course files (FIT SDK profile): `file_id.type` 6 (course; an activity, 4, is read the
/// same way), `course.name` (field 5), `record` positions (fields 0, 1: semicircles), altitude
/// (`enhanced_altitude` 78, else `altitude` 2: scale 5, offset 500) and distance (5: scale 100),
/// and `course_point` (message 32): position (2, 3), distance (4), type (5), name (6).
enum FITCourseReader {
    static let semicirclesToDegrees = 180.0 / 2_147_483_648.0

    static func read(_ bytes: [UInt8], fileName: String) throws(CourseImportError) -> RawCourse {
        let file: FITFile
        do { file = try FITFile(bytes: bytes) } catch { throw CourseImportError(file: fileName, .fit(error.description)) }
        var raw = RawCourse(format: .fit)
        if let id = file.messages.first(where: { $0.global == 0 }), let t = id.values[0].map({ UInt8(clamping: Int($0)) }), t != 6 {
            guard t == 4 else { throw CourseImportError(file: fileName, .fitNotACourse(t)) }
            raw.warnings.append("the file is an activity, not a course: its track is the course")
        }
        var index = 0
        for m in file.messages {
            switch m.global {
            case 31:
                if raw.name == nil, let n = m.strings[5] { raw.name = XMLReading.trimmed(n) }
            case 20:
                guard let la = m.values[0], let lo = m.values[1] else { continue }
                guard index < CourseImport.inputPointsMax else { throw CourseImportError(file: fileName, .tooManyPoints(index + 1)) }
                let lat = la * semicirclesToDegrees, lon = lo * semicirclesToDegrees
                guard abs(lat) <= 90, abs(lon) <= 180 else {
                    throw CourseImportError(file: fileName, .pointOutOfRange(index: index, latDeg: lat, lonDeg: lon))
                }
                index += 1
                let alt = m.value(78, scale: 5, offset: 500) ?? m.value(2, scale: 5, offset: 500)
                raw.points.append(RawCourse.Point(latDeg: lat, lonDeg: lon, altitudeM: alt, distanceM: m.value(5, scale: 100)))
            case 32:
                let lat = m.values[2].map { $0 * semicirclesToDegrees }, lon = m.values[3].map { $0 * semicirclesToDegrees }
                let positioned = lat != nil && lon != nil && abs(lat!) <= 90 && abs(lon!) <= 180
                let distance = m.value(4, scale: 100)
                guard positioned || distance != nil else {
                    raw.warnings.append("course point \(raw.cues.count + 1) has neither a position nor a distance: left out")
                    continue
                }
                raw.cues.append(RawCourse.RawCue(latDeg: positioned ? lat : nil, lonDeg: positioned ? lon : nil, distanceM: distance,
                                                 type: CueType(rawValue: m.values[5].map { UInt8(clamping: Int($0)) } ?? 0),
                                                 name: XMLReading.clipped(m.strings[6].map(XMLReading.trimmed) ?? "", bytes: Course.cueNameBytesMax),
                                                 notes: "", ordered: true))
            default:
                break
            }
        }
        if raw.name?.isEmpty ?? false { raw.name = nil }
        return raw
    }
}
