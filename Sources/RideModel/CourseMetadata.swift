/// What a ride that followed a course keeps in its metadata (docs/navigation.md, "In the ride"):
/// the course's name and length, and the stretches off it. One text form, read by the app core
/// (recovery) and the ride files (the FIT file's `course` message and `off_course` events).
public enum CourseMetadata {
    public static let nameKey = "course.name"
    public static let lengthKey = "course.length_m"
    /// `start,end,alarm,max_m[,w]` per period (ms from the ride's start, metres; `w`: the wrong
    /// way), separated by `;`.
    public static let offCourseKey = "course.off_course"
    /// Periods past `periodsMax`, counted only.
    public static let offCourseDroppedKey = "course.off_course_dropped"
    public static let periodsMax = 64

    /// A stretch off the course, ms from the ride's start.
    public struct Period: Sendable, Hashable {
        public var startMs: Int64
        public var endMs: Int64
        public var alarmMs: Int64
        public var maxDistanceM: Double
        public var wrongWay: Bool

        public init(startMs: Int64, endMs: Int64, alarmMs: Int64, maxDistanceM: Double, wrongWay: Bool) {
            self.startMs = startMs
            self.endMs = endMs
            self.alarmMs = alarmMs
            self.maxDistanceM = maxDistanceM
            self.wrongWay = wrongWay
        }
    }

    public static func encode(_ periods: [Period]) -> String {
        periods.map { p in "\(p.startMs),\(p.endMs),\(p.alarmMs),\(Int(p.maxDistanceM.rounded()))" + (p.wrongWay ? ",w" : "") }
            .joined(separator: ";")
    }

    /// The periods of a `course.off_course` value (malformed entries are left out).
    public static func decode(_ value: String) -> [Period] {
        var out: [Period] = []
        for entry in value.split(separator: ";").prefix(periodsMax) {
            let f = entry.split(separator: ",")
            guard f.count >= 4, let s = Int64(f[0]), let e = Int64(f[1]), let a = Int64(f[2]), let m = Double(f[3]), e >= s else { continue }
            out.append(Period(startMs: s, endMs: e, alarmMs: a, maxDistanceM: m, wrongWay: f.count > 4 && f[4] == "w"))
        }
        return out
    }
}
