import Navigation
import RideModel

/// A course on the card as the menu lists it (`CourseStorePort.list` on the board).
public struct CourseListing: Sendable, Hashable {
    /// The name the card keys it by (`ctl course load NAME`).
    public var name: String
    public var lengthM: Double
    public var ascentM: Double?
    public var cueCount: Int
    public var climbCount: Int

    public init(name: String, lengthM: Double, ascentM: Double?, cueCount: Int, climbCount: Int) {
        self.name = name
        self.lengthM = lengthM
        self.ascentM = ascentM
        self.cueCount = cueCount
        self.climbCount = climbCount
    }
}

/// The Courses screen (LAP on idle): the courses on the card, one chosen with the buttons, and
/// the chosen course's climbs before the ride. Pure: presses come in, what to do goes out.
///
/// - PAGE: the next row (in the list), the next climbs (on a course's page).
/// - LAP: the list's row: NO COURSE clears the course, a course loads it (and shows its page);
///   on a course's page, back to the list.
/// - START: back to idle.
public struct CoursesMenu: Sendable, Hashable {
    public static let listMax = 64
    public static let messageMs: Int64 = 3_000

    public enum Page: Sendable, Hashable {
        case list
        /// The loaded course: length, ascent, cues, and its climbs from `climbRow` on.
        case course
    }

    public enum Action: Sendable, Hashable {
        case none
        case close
        case load(String)
        case clear
    }

    public var page = Page.list
    /// Row 0 is NO COURSE, then the courses.
    public var cursor = 0
    public var courses: [CourseListing] = []
    /// The list was asked for and has not come yet.
    public var loading = false
    public var message: String?
    public var messageUntil: MonotonicInstant?
    /// The first climb row shown on the course page.
    public var climbRow = 0

    public init() {}

    public var rowCount: Int { 1 + courses.count }

    public mutating func listed(_ list: [CourseListing]) {
        courses = Array(list.prefix(Self.listMax))
        loading = false
        cursor = min(cursor, rowCount - 1)
    }

    public mutating func say(_ m: String, at now: MonotonicInstant) {
        message = m
        messageUntil = now.advanced(byMs: Self.messageMs)
    }

    public mutating func expire(at now: MonotonicInstant) {
        if let u = messageUntil, now >= u { message = nil; messageUntil = nil }
    }

    /// A press on the menu (`course`: the course loaded now, for its page).
    public mutating func press(_ button: Button, course: Course?) -> Action {
        switch (page, button) {
        case (_, .startPause):
            return .close
        case (.list, .page):
            cursor = (cursor + 1) % max(1, rowCount)
            return .none
        case (.list, .lap):
            if cursor == 0 { return .clear }
            return .load(courses[cursor - 1].name)
        case (.course, .page):
            let climbs = course?.climbs.count ?? 0
            climbRow = climbs > 0 ? (climbRow + Self.climbRowsShown) % (((climbs - 1) / Self.climbRowsShown + 1) * Self.climbRowsShown) : 0
            return .none
        case (.course, .lap):
            page = .list
            return .none
        case (_, .power):
            return .none // the power button acts on its long press only
        }
    }

    /// Climb rows on the course page at 128×64.
    public static let climbRowsShown = 2
}

