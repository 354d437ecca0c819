/// Where the follower stands with the course.
public enum NavigationState: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// A course is loaded but no fix has put the rider on it yet (riding to its start): no alarm.
    case acquiring = 0
    case onCourse = 1
    /// Farther than `FollowerSettings.offCourseDistanceM` for several fixes: alarmed.
    case offCourse = 2
    /// On the course but riding against its direction for several seconds: alarmed.
    case wrongWay = 3
    /// At the end of the course.
    case finished = 4

    public var description: String {
        switch self {
        case .acquiring: "acquiring"
        case .onCourse: "on_course"
        case .offCourse: "off_course"
        case .wrongWay: "wrong_way"
        case .finished: "finished"
        }
    }
}

/// How far a cue's announcement has gone (docs/navigation.md, "Cues").
public enum CueStage: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
    case none = 0
    /// The first word of it, ~150–300 m before.
    case first = 1
    /// The approach beep: 100 m or 15 s before.
    case approach = 2
    /// At the turn: within 25 m.
    case now = 3

    public static func < (a: CueStage, b: CueStage) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .none: "none"
        case .first: "first"
        case .approach: "approach"
        case .now: "now"
        }
    }
}

/// A cue as the screen shows it.
public struct CueView: Sendable, Hashable {
    public var index: Int
    public var type: CueType
    public var name: String
    /// Distance from the rider to the cue along the course, m.
    public var distanceM: Double
    public var stage: CueStage

    public init(index: Int, type: CueType, name: String, distanceM: Double, stage: CueStage) {
        self.index = index
        self.type = type
        self.name = name
        self.distanceM = distanceM
        self.stage = stage
    }
}

/// The climb the rider is on, or the next one.
public struct ClimbView: Sendable, Hashable {
    /// 1-based number of the climb, and how many the course has.
    public var number: Int
    public var count: Int
    /// On it (true), or the next one ahead (false).
    public var onClimb: Bool
    /// On it: to its top. Ahead: to its foot.
    public var distanceM: Double
    /// On it: elevation left to the top, m. Ahead: the climb's gain.
    public var elevationM: Double
    /// On it: the mean grade of what is left, %. Ahead: the climb's mean grade.
    public var gradePercent: Double
    /// The climb's length, m.
    public var lengthM: Double

    public init(number: Int, count: Int, onClimb: Bool, distanceM: Double, elevationM: Double, gradePercent: Double, lengthM: Double) {
        self.number = number
        self.count = count
        self.onClimb = onClimb
        self.distanceM = distanceM
        self.elevationM = elevationM
        self.gradePercent = gradePercent
        self.lengthM = lengthM
    }
}

/// Everything the navigation pages draw, made by the follower after each fix (no allocation:
/// the cue names are the course's own strings, the course a reference).
public struct NavigationView: Sendable, Hashable {
    /// The course being followed (nil: none loaded).
    public var course: Course?
    public var state: NavigationState = .acquiring
    /// No fix for `FollowerSettings.fixLostMs` (or 2.5 of a sparser source's usual intervals): the
    /// figures are the last known ones.
    public var gpsLost = false
    /// The rider's place on the course, m from its start (nil before the first lock).
    public var alongM: Double?
    public var distanceToGoM: Double?
    /// Time to the end at the average moving speed so far, s (nil until a minute of riding).
    public var secondsToGo: Double?
    /// Ascent left to the end of the course, m (nil without altitudes).
    public var ascentToGoM: Double?
    /// Distance from the course (the matched point), m.
    public var offsetM: Double?
    /// Where the course is from the rider (off course, wrong way, or before the first lock):
    /// compass bearing and distance to the nearest point of the course ahead.
    public var backBearingDeg: Double?
    public var backDistanceM: Double?
    /// The rider's direction of travel (from the fixes), degrees; nil while standing.
    public var headingDeg: Double?
    /// The course's direction where the rider is, degrees.
    public var courseBearingDeg: Double?
    /// The rider's last position.
    public var latDeg: Double?
    public var lonDeg: Double?
    public var cue: CueView?
    /// The cue after it, when it comes soon after (`FollowerSettings.closeCuesM`).
    public var followingCue: CueView?
    public var climb: ClimbView?

    public init(course: Course? = nil) { self.course = course }
}
