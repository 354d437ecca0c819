// The GPS receiver's state as the rider sees it (the status row, the idle screen), defined here
// so that the data source can report it to the app core as a `SensorEvent` (Positioning makes
// it, AppCore shows it).

/// What the receiver can tell: nothing heard (no gpsd, no receiver), no fix, a 2D fix (no
/// altitude) or a 3D fix.
public enum GpsFixMode: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
    case absent = 0, noFix = 1, fix2D = 2, fix3D = 3

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var hasFix: Bool { self >= .fix2D }

    /// As the screen shows it: "--", "NO FIX", "2D", "3D".
    public var description: String {
        switch self {
        case .absent: "--"
        case .noFix: "NO FIX"
        case .fix2D: "2D"
        case .fix3D: "3D"
        }
    }
}

/// The receiver's state as the rider sees it: the fix mode and the satellites in use.
public struct GpsStatus: Sendable, Hashable {
    public var mode: GpsFixMode = .absent
    public var satellitesUsed: Int?
    public var satellitesVisible: Int?

    public init(mode: GpsFixMode = .absent, satellitesUsed: Int? = nil, satellitesVisible: Int? = nil) {
        self.mode = mode
        self.satellitesUsed = satellitesUsed
        self.satellitesVisible = satellitesVisible
    }
}
