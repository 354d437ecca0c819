/// What a cue says: the FIT profile's `course_point` type, by its value (FIT SDK Profile,
/// "course_point"), so a FIT course's cues keep their type exactly and a type this app does not
/// name still round-trips. TCX `PointType`s and GPX waypoint types map onto the same values.
public struct CueType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let generic = CueType(rawValue: 0)
    public static let summit = CueType(rawValue: 1)
    public static let valley = CueType(rawValue: 2)
    public static let water = CueType(rawValue: 3)
    public static let food = CueType(rawValue: 4)
    public static let danger = CueType(rawValue: 5)
    public static let left = CueType(rawValue: 6)
    public static let right = CueType(rawValue: 7)
    public static let straight = CueType(rawValue: 8)
    public static let firstAid = CueType(rawValue: 9)
    public static let fourthCategory = CueType(rawValue: 10)
    public static let thirdCategory = CueType(rawValue: 11)
    public static let secondCategory = CueType(rawValue: 12)
    public static let firstCategory = CueType(rawValue: 13)
    public static let horsCategory = CueType(rawValue: 14)
    public static let sprint = CueType(rawValue: 15)
    public static let leftFork = CueType(rawValue: 16)
    public static let rightFork = CueType(rawValue: 17)
    public static let middleFork = CueType(rawValue: 18)
    public static let slightLeft = CueType(rawValue: 19)
    public static let sharpLeft = CueType(rawValue: 20)
    public static let slightRight = CueType(rawValue: 21)
    public static let sharpRight = CueType(rawValue: 22)
    public static let uTurn = CueType(rawValue: 23)
    public static let segmentStart = CueType(rawValue: 24)
    public static let segmentEnd = CueType(rawValue: 25)

    /// The FIT SDK's names of the course_point values (index = value); "" where the profile has
    /// none (26).
    static let fitNames: [String] = [
        "generic", "summit", "valley", "water", "food", "danger", "left", "right", "straight", "first_aid",
        "fourth_category", "third_category", "second_category", "first_category", "hors_category", "sprint",
        "left_fork", "right_fork", "middle_fork", "slight_left", "sharp_left", "slight_right", "sharp_right",
        "u_turn", "segment_start", "segment_end", "", "campsite", "aid_station", "rest_area", "general_distance",
        "service", "energy_gel", "sports_drink", "mile_marker", "checkpoint", "shelter", "meeting_spot", "overlook",
        "toilet", "shower", "gear", "sharp_curve", "steep_incline", "tunnel", "bridge", "obstacle", "crossing",
        "store", "transition", "navaid", "transport", "alert", "info",
    ]

    /// The FIT profile's name ("slight_left"), or "type_N" for a value it does not name.
    public var name: String {
        let i = Int(rawValue)
        return i < Self.fitNames.count && !Self.fitNames[i].isEmpty ? Self.fitNames[i] : "type_\(rawValue)"
    }

    public var description: String { name }

    /// The type named `name` in the FIT profile's spelling, TCX's `PointType` spelling ("First
    /// Aid", "4th Category") or a GPX waypoint's type/symbol ("Slight Left", "u-turn"): case,
    /// spaces, hyphens and underscores do not matter. nil for a name no list has.
    public init?(name: String) {
        var key: [UInt8] = []
        for b in name.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): key.append(b + 32)
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): key.append(b)
            default: continue
            }
            if key.count > 32 { return nil }
        }
        let k = String(decoding: key, as: UTF8.self)
        switch k {
        case "4thcategory": self = .fourthCategory; return
        case "3rdcategory": self = .thirdCategory; return
        case "2ndcategory": self = .secondCategory; return
        case "1stcategory": self = .firstCategory; return
        case "hc", "horscategorie": self = .horsCategory; return
        case "turnleft": self = .left; return
        case "turnright": self = .right; return
        case "uturn", "turnaround": self = .uTurn; return
        case "straightahead", "continue": self = .straight; return
        default: break
        }
        for (i, n) in Self.fitNames.enumerated() where !n.isEmpty {
            if String(decoding: n.utf8.filter { $0 != UInt8(ascii: "_") }, as: UTF8.self) == k {
                self.init(rawValue: UInt8(i))
                return
            }
        }
        return nil
    }

    /// The direction of the turn, degrees (negative left, positive right, 180 a U-turn), for the
    /// arrow; nil for a cue that is not a turn (water, summit, generic...).
    public var turnDeg: Double? {
        switch self {
        case .left, .leftFork: -90
        case .right, .rightFork: 90
        case .slightLeft: -45
        case .slightRight: 45
        case .sharpLeft: -135
        case .sharpRight: 135
        case .uTurn: 180
        case .straight, .middleFork: 0
        default: nil
        }
    }

    public var isTurn: Bool { turnDeg != nil }

    /// A short word for the screen ("LEFT", "SL RIGHT", "WATER").
    public var word: String {
        switch self {
        case .left: "LEFT"
        case .right: "RIGHT"
        case .slightLeft: "SL LEFT"
        case .slightRight: "SL RIGHT"
        case .sharpLeft: "SH LEFT"
        case .sharpRight: "SH RIGHT"
        case .uTurn: "U-TURN"
        case .straight: "STRAIGHT"
        case .leftFork: "FORK L"
        case .rightFork: "FORK R"
        case .middleFork: "FORK"
        case .summit: "SUMMIT"
        case .valley: "VALLEY"
        case .water: "WATER"
        case .food: "FOOD"
        case .danger: "DANGER"
        case .firstAid: "FIRST AID"
        case .sprint: "SPRINT"
        case .fourthCategory, .thirdCategory, .secondCategory, .firstCategory, .horsCategory: "CLIMB"
        default: "CUE"
        }
    }

    /// The cue type a change of direction at a bend gives (docs/navigation.md, "Cues from the
    /// geometry"): under `CueRules.turnMinDeg` none; then slight up to 60°, normal up to 120°,
    /// sharp up to 160°, a U-turn beyond.
    public static func forTurn(_ deg: Double) -> CueType? {
        let a = abs(deg)
        guard a >= CueRules.turnMinDeg else { return nil }
        let left = deg < 0
        if a > CueRules.uTurnMinDeg { return .uTurn }
        if a > CueRules.sharpMinDeg { return left ? .sharpLeft : .sharpRight }
        if a > CueRules.normalMinDeg { return left ? .left : .right }
        return left ? .slightLeft : .slightRight
    }
}

/// The rules that derive turn cues from a course's geometry when its file has none.
public enum CueRules {
    /// A change of direction smaller than this is no turn (a road's bends).
    public static let turnMinDeg = 30.0
    public static let normalMinDeg = 60.0
    public static let sharpMinDeg = 120.0
    public static let uTurnMinDeg = 160.0
    /// The direction before and after a bend is measured over this much of the course on each
    /// side (a bend drawn as many short segments is one turn).
    public static let legM = 30.0
    /// Bends closer than this merge into one turn (a chicane is its net turn, a roundabout's exit
    /// the net change of direction).
    public static let mergeM = 40.0
    /// A waypoint of a GPX file becomes a cue only this close to the route.
    public static let waypointMaxDistanceM = 50.0
}
