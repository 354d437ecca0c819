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

    /// A shorter caption for a field too narrow for the value beside `label` (a caption left of
    /// the value on a small panel); nil when `label` is already short.
    public var shortLabel: String? {
        switch self {
        case .timer, .elapsed, .lapTime, .lapNumber: nil
        case .metric(let m):
            switch m {
            case .averageSpeed: "AVG"
            case .maxSpeed: "MAX"
            case .averageHeartRate: "AVG HR"
            case .averageCadence: "AVG"
            case .lapAverageSpeed: "LAP"
            case .lapAverageHeartRate: "LAP HR"
            case .lapDistance: "LAP"
            case .altitude: "ALT"
            case .ascent: "ASC M"
            case .grade: "%"
            default: nil
            }
        }
    }
}

/// How big a field's value is drawn: a step of the panel's digit fonts (`FontSet.digits`). If
/// the value does not fit its frame the next smaller font is used.
public enum FieldSize: Int, Sendable, Hashable, Comparable {
    case medium = 0   // 128x64: 8 px wide digits, 10 px tall; 400x240: 16 x 26
    case large = 1    // 128x64: 12 px wide, 15 px tall; 400x240: 24 x 30
    case huge = 2     // 128x64: 16 px wide, 26 px tall; 400x240: 32 x 52

    /// The font on a panel with these fonts.
    public func font(in fonts: FontSet) -> Font { fonts.digits(self) }

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

/// A data page placed on a panel: fields with their frames, the lines between them, graphics.
/// Made from a `PageDesign` for the panel's size (`PageDesign.layout`); the renderer draws any
/// field the same way.
public struct PageLayout: Sendable, Hashable {
    public var name: String
    public var fields: [Field]
    /// Separator lines: horizontal or vertical rectangles.
    public var rules: [Rect]
    /// Graphics and where they go (the map page's track).
    public var graphics: [PlacedGraphic]

    public init(name: String, fields: [Field], rules: [Rect] = [], graphics: [PlacedGraphic] = []) {
        self.name = name
        self.fields = fields
        self.rules = rules
        self.graphics = graphics
    }

    public init(name: String, fields: [Field], rules: [Rect] = [], map: Rect?) {
        self.init(name: name, fields: fields, rules: rules, graphics: map.map { [PlacedGraphic(.track, $0)] } ?? [])
    }

    /// Where the track so far is drawn (the map page), if anywhere.
    public var map: Rect? { graphics.first { $0.kind == .track }?.frame }
}

/// The running pages laid out for a panel size, with the panel's geometry (fonts, scale).
public struct ScreenLayouts: Sendable {
    public let geometry: PanelGeometry
    public var runningPages: [PageLayout]
    /// The same pages beside the rear radar's column (`RadarColumn`), shown while a radar is paired.
    public var radarRunningPages: [PageLayout]
    public var radarColumn: Rect { RadarColumn.frame(geometry) }
    /// The navigation pages (shown after the data pages while a course is loaded).
    public var navigationPages: [PageLayout]
    /// The running pages laid out above the status line (`PanelGeometry.statusLine`), shown
    /// while a companion's pairing code is there: every field whole, in a smaller size where
    /// the page needs it. Pages placed by hand have none (the status line covers their foot).
    public var statusLinePages: [PageLayout]
    /// The pages beside the radar column and above the status line (a pairing code with a radar).
    public var radarStatusLinePages: [PageLayout]
    /// The navigation pages laid out above the status line, as `statusLinePages`.
    public var navigationStatusLinePages: [PageLayout]
    /// The navigation pages beside the radar column (issue 29's column on issue 28's pages), and
    /// those also above the status line.
    public var radarNavigationPages: [PageLayout]
    public var radarNavigationStatusLinePages: [PageLayout]
    public var width: Int { geometry.width }
    public var height: Int { geometry.height }

    /// Pages already placed (tests, a custom page); the radar column is drawn over their left edge.
    public init(width: Int, height: Int, runningPages: [PageLayout]) {
        let g = PanelGeometry(width: width, height: height)
        geometry = g
        self.runningPages = runningPages
        radarRunningPages = runningPages
        statusLinePages = runningPages
        radarStatusLinePages = runningPages
        navigationPages = NavigationPageDesigns.all.map { $0.layout(g) }
        navigationStatusLinePages = NavigationPageDesigns.all.map { Self.aboveStatusLine($0, g) }
        radarNavigationPages = NavigationPageDesigns.all.map { $0.layout(g, in: RadarColumn.pageArea(g)) }
        radarNavigationStatusLinePages = NavigationPageDesigns.all.map { Self.besideRadarAboveStatusLine($0, g) }
    }

    /// `designs` laid out for a `width` × `height` panel.
    public init(width: Int, height: Int, designs: [PageDesign] = RunningPages.standard) {
        let g = PanelGeometry(width: width, height: height)
        geometry = g
        runningPages = designs.map { $0.layout(g) }
        radarRunningPages = designs.map { $0.layout(g, in: RadarColumn.pageArea(g)) }
        navigationPages = NavigationPageDesigns.all.map { $0.layout(g) }
        statusLinePages = designs.map { Self.aboveStatusLine($0, g) }
        navigationStatusLinePages = NavigationPageDesigns.all.map { Self.aboveStatusLine($0, g) }
        radarStatusLinePages = designs.map { Self.besideRadarAboveStatusLine($0, g) }
        radarNavigationPages = NavigationPageDesigns.all.map { $0.layout(g, in: RadarColumn.pageArea(g)) }
        radarNavigationStatusLinePages = NavigationPageDesigns.all.map { Self.besideRadarAboveStatusLine($0, g) }
    }

    /// The navigation pages for the moment: beside the radar column while a radar is paired,
    /// above the status line while a pairing code is shown.
    public func navigationPages(radar: Bool, statusLine: Bool) -> [PageLayout] {
        radar ? (statusLine ? radarNavigationStatusLinePages : radarNavigationPages) : (statusLine ? navigationStatusLinePages : navigationPages)
    }

    /// `design` beside the radar column and above the status line, as `aboveStatusLine`.
    static func besideRadarAboveStatusLine(_ design: PageDesign, _ g: PanelGeometry) -> PageLayout {
        var besideAbove = RadarColumn.pageArea(g)
        besideAbove.height = min(besideAbove.height, g.statusLine.y - besideAbove.y)
        var smaller = 0
        while smaller < FieldSize.huge.rawValue, !design.fits(g, height: besideAbove.height, smaller: smaller) { smaller += 1 }
        return design.layout(g, in: besideAbove, smaller: smaller)
    }

    /// `design` laid out above the status line: the least step down in size that gives every
    /// row its height.
    static func aboveStatusLine(_ design: PageDesign, _ g: PanelGeometry) -> PageLayout {
        var above = g.runningArea
        above.height = g.statusLine.y
        var smaller = 0
        while smaller < FieldSize.huge.rawValue, !design.fits(g, height: above.height, smaller: smaller) { smaller += 1 }
        return design.layout(g, in: above, smaller: smaller)
    }

    public static let standard128x64 = ScreenLayouts(width: 128, height: 64)
    public static let standard128x32 = ScreenLayouts(width: 128, height: 32)

    /// The standard pages on a 128-pixel-wide OLED of this height.
    public static func standard(height: Int) -> ScreenLayouts { height == 32 ? standard128x32 : standard128x64 }

    /// The standard pages on any panel.
    public static func standard(width: Int, height: Int) -> ScreenLayouts {
        switch (width, height) {
        case (128, 64): standard128x64
        case (128, 32): standard128x32
        default: ScreenLayouts(width: width, height: height)
        }
    }
}

/// The running pages, each described once for every panel size (`PageDesign`).
public enum RunningPages {
    private static func captionLeftWhenCompact(_ content: FieldContent, _ size: FieldSize, in classes: SizeClasses = .all) -> PageDesign.Cell {
        .init(content, size, label: .top, in: classes, compact: .init(size, .left))
    }

    /// Timer, speed, distance; on a large panel also average speed, heart rate, power, cadence.
    public static let ride = PageDesign("RIDE", [
        .fit(pad: 2, [.init(.timer, .huge, label: .none, compact: .init(.large, .left))]),
        .fill([captionLeftWhenCompact(.metric(.speed), .large), captionLeftWhenCompact(.metric(.distance), .large),
               .init(.metric(.averageSpeed), .large, in: .large)]),
        .fill([.init(.metric(.heartRate), .large), .init(.metric(.power), .large), .init(.metric(.cadence), .large)], in: .large),
    ])

    /// Timer, power, cadence, heart rate and its zone (the timer last and small on a compact
    /// panel); on a large panel also NP, the power zone and the averages.
    public static let power = PageDesign("POWER", [
        .fit(pad: 1, [.init(.timer, .large, label: .left)], in: .from(.regular)),
        .fill([.init(.metric(.power), .large, label: .left), .init(.metric(.cadence), .large, label: .left),
               .init(.metric(.normalizedPower), .large, label: .left, in: .large)]),
        .fill([.init(.metric(.heartRate), .large, label: .left),
               .init(.metric(.heartRateZone), .large, label: .left, in: .from(.regular)),
               .init(.metric(.powerZone), .large, label: .left, in: .large),
               .init(.timer, .medium, label: .none, in: .compact)]),
        .fill([.init(.metric(.averagePower), .large), .init(.metric(.maxPower), .large), .init(.metric(.averageHeartRate), .large)],
              in: .large),
    ])

    /// Timer, lap time, lap number, power zone (lap time over the timer on a compact panel); on a
    /// large panel also the lap's distance and averages.
    public static let lap = PageDesign("LAP", [
        .fit(pad: 1, [.init(.timer, .large, label: .left)], in: .from(.regular)),
        .fit(pad: 2, [.init(.lapTime, .huge, label: .left, compact: .init(.large, .left))]),
        .fill([.init(.lapNumber, .large, label: .left), .init(.metric(.powerZone), .large, label: .left),
               .init(.metric(.lapDistance), .large, label: .left, in: .large)], in: .from(.regular)),
        .fill([.init(.metric(.lapAverageSpeed), .large), .init(.metric(.lapAveragePower), .large),
               .init(.metric(.lapAverageHeartRate), .large)], in: .large),
        .fill([.init(.timer, .large, label: .left)], in: .compact),
    ])

    /// Timer, data pages 1-3, then the climbing and map pages (with GPS or a barometer; the
    /// core's `runningPageCount` says how many the rider reaches).
    public static let standard: [PageDesign] = [ride, power, lap, PositionPages.climb, PositionPages.map]
}
