import AppCore
import Display

/// What a field shows: a clock of the ride or one of the app core's metrics.
public enum FieldContent: Sendable, Hashable {
    /// Timer time (moving time, frozen while paused).
    case timer
    /// Elapsed time (wall time since the start, runs while paused).
    case elapsed
    case lapTime
    case lapNumber
    case metric(Metric)

    /// The field's caption (units where the value has one).
    public var label: String {
        switch self {
        case .timer: "TIME"
        case .elapsed: "ELAPSED"
        case .lapTime: "LAP"
        case .lapNumber: "LAP#"
        case .metric(let m):
            switch m {
            case .speed: "KM/H"
            case .averageSpeed: "AVG KM/H"
            case .maxSpeed: "MAX KM/H"
            case .distance: "KM"
            case .heartRate: "HR"
            case .averageHeartRate: "AVG HR"
            case .maxHeartRate: "MAX HR"
            case .heartRateZone: "HR Z"
            case .power: "W"
            case .averagePower: "AVG W"
            case .maxPower: "MAX W"
            case .normalizedPower: "NP"
            case .powerZone: "PWR Z"
            case .cadence: "RPM"
            case .averageCadence: "AVG RPM"
            case .lapDistance: "LAP KM"
            case .lapAveragePower: "LAP W"
            case .lapAverageSpeed: "LAP KM/H"
            case .lapAverageHeartRate: "LAP HR"
            case .altitude: "ALT M"
            case .ascent: "ASCENT M"
            case .grade: "GRADE %"
            }
        }
    }
}

/// How big a field's value is drawn. If the value does not fit its frame the next smaller size
/// is used.
public enum FieldSize: Int, Sendable, Hashable, Comparable {
    case medium = 0   // 8 px wide digits, 10 px tall
    case large = 1    // 12 px wide, 15 px tall
    case huge = 2     // 16 px wide, 26 px tall

    public var font: Font {
        switch self {
        case .medium: .digitsMedium
        case .large: .digitsLarge
        case .huge: .digitsHuge
        }
    }

    public var smaller: FieldSize? { FieldSize(rawValue: rawValue - 1) }

    public static func < (a: FieldSize, b: FieldSize) -> Bool { a.rawValue < b.rawValue }
}

/// Where a field's caption goes.
public enum LabelPlacement: Sendable, Hashable {
    case none
    /// Small caption at the top left, value right-aligned at the bottom.
    case top
    /// Small caption at the left, value right-aligned, both centred vertically.
    case left
}

/// One value on a page: what, where, how big.
public struct Field: Sendable, Hashable {
    public var content: FieldContent
    public var frame: Rect
    public var size: FieldSize
    public var label: LabelPlacement

    public init(_ content: FieldContent, _ frame: Rect, size: FieldSize, label: LabelPlacement = .top) {
        self.content = content
        self.frame = frame
        self.size = size
        self.label = label
    }
}

/// A data page: a list of fields and the lines between them. Adding a field is adding a value
/// here; the renderer draws any field the same way.
public struct PageLayout: Sendable, Hashable {
    public var name: String
    public var fields: [Field]
    /// Separator lines: horizontal (height 1) or vertical (width 1) rectangles.
    public var rules: [Rect]
    /// Where the track so far is drawn (the map page), if anywhere.
    public var map: Rect?

    public init(name: String, fields: [Field], rules: [Rect] = [], map: Rect? = nil) {
        self.name = name
        self.fields = fields
        self.rules = rules
        self.map = map
    }
}

/// The running pages for a panel size.
public struct ScreenLayouts: Sendable, Hashable {
    public var width: Int
    public var height: Int
    public var runningPages: [PageLayout]

    public init(width: Int, height: Int, runningPages: [PageLayout]) {
        self.width = width
        self.height = height
        self.runningPages = runningPages
    }

    /// 128x64: page 1 timer / speed / distance; page 2 timer, power, cadence, heart rate,
    /// heart-rate zone; page 3 timer, lap time, lap number, power zone.
    public static let standard128x64 = ScreenLayouts(width: 128, height: 64, runningPages: [
        PageLayout(name: "RIDE", fields: [
            Field(.timer, Rect(x: 0, y: 0, width: 126, height: 28), size: .huge, label: .none),
            Field(.metric(.speed), Rect(x: 0, y: 31, width: 61, height: 33), size: .large),
            Field(.metric(.distance), Rect(x: 64, y: 31, width: 62, height: 33), size: .large),
        ], rules: [Rect(x: 0, y: 29, width: 126, height: 1), Rect(x: 62, y: 31, width: 1, height: 33)]),
        PageLayout(name: "POWER", fields: [
            Field(.timer, Rect(x: 0, y: 0, width: 126, height: 16), size: .large, label: .left),
            Field(.metric(.power), Rect(x: 0, y: 18, width: 61, height: 22), size: .large, label: .left),
            Field(.metric(.cadence), Rect(x: 64, y: 18, width: 62, height: 22), size: .large, label: .left),
            Field(.metric(.heartRate), Rect(x: 0, y: 42, width: 61, height: 22), size: .large, label: .left),
            Field(.metric(.heartRateZone), Rect(x: 64, y: 42, width: 62, height: 22), size: .large, label: .left),
        ], rules: [Rect(x: 0, y: 17, width: 126, height: 1), Rect(x: 0, y: 41, width: 126, height: 1),
                   Rect(x: 62, y: 18, width: 1, height: 46)]),
        PageLayout(name: "LAP", fields: [
            Field(.timer, Rect(x: 0, y: 0, width: 126, height: 16), size: .large, label: .left),
            Field(.lapTime, Rect(x: 0, y: 18, width: 126, height: 28), size: .huge, label: .left),
            Field(.lapNumber, Rect(x: 0, y: 48, width: 61, height: 16), size: .large, label: .left),
            Field(.metric(.powerZone), Rect(x: 64, y: 48, width: 62, height: 16), size: .large, label: .left),
        ], rules: [Rect(x: 0, y: 17, width: 126, height: 1), Rect(x: 0, y: 47, width: 126, height: 1),
                   Rect(x: 62, y: 48, width: 1, height: 16)]),
        PositionPages.climb128x64,
        PositionPages.map128x64,
    ])

    /// 128x32: one row per page.
    public static let standard128x32 = ScreenLayouts(width: 128, height: 32, runningPages: [
        PageLayout(name: "RIDE", fields: [
            Field(.timer, Rect(x: 0, y: 0, width: 126, height: 15), size: .large, label: .left),
            Field(.metric(.speed), Rect(x: 0, y: 17, width: 61, height: 15), size: .large, label: .left),
            Field(.metric(.distance), Rect(x: 64, y: 17, width: 62, height: 15), size: .large, label: .left),
        ], rules: [Rect(x: 0, y: 16, width: 126, height: 1)]),
        PageLayout(name: "POWER", fields: [
            Field(.metric(.power), Rect(x: 0, y: 0, width: 61, height: 15), size: .large, label: .left),
            Field(.metric(.cadence), Rect(x: 64, y: 0, width: 62, height: 15), size: .large, label: .left),
            Field(.metric(.heartRate), Rect(x: 0, y: 17, width: 61, height: 15), size: .large, label: .left),
            Field(.timer, Rect(x: 64, y: 17, width: 62, height: 15), size: .medium, label: .none),
        ], rules: [Rect(x: 0, y: 16, width: 126, height: 1)]),
        PageLayout(name: "LAP", fields: [
            Field(.lapTime, Rect(x: 0, y: 0, width: 126, height: 15), size: .large, label: .left),
            Field(.timer, Rect(x: 0, y: 17, width: 126, height: 15), size: .large, label: .left),
        ], rules: [Rect(x: 0, y: 16, width: 126, height: 1)]),
        PositionPages.climb128x32,
        PositionPages.map128x32,
    ])

    public static func standard(height: Int) -> ScreenLayouts { height == 32 ? standard128x32 : standard128x64 }
}
