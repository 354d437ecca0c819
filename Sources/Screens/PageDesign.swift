import Display

/// What a running page draws besides fields, in a row of its own (the map page's track).
/// A new graphic is a case here and a branch in `ScreenRenderer.drawGraphic`/`appendGraphicKey`.
public enum PageGraphic: Sendable, Hashable {
    /// The track so far, north up (`ScreenRenderer.drawMap`); with a course, the course around
    /// the rider (`drawCourseMap`).
    case track
    /// The next cue or the way back to the course, and the distance to go (`drawNavigation`).
    case navigation
    /// The course's profile ahead and the climb (`drawProfile`).
    case courseProfile
}

/// A graphic placed on a page.
public struct PlacedGraphic: Sendable, Hashable {
    public var kind: PageGraphic
    public var frame: Rect
    public init(_ kind: PageGraphic, _ frame: Rect) {
        self.kind = kind
        self.frame = frame
    }
}

/// A running page described once, for every panel: rows top to bottom, each a list of fields
/// side by side or a graphic. `layout(_:)` places it on a panel of any size (`PanelGeometry`):
///
/// - rows and cells appear on the size classes they name (`in:`), so the 128×32 OLED shows
///   fewer fields and the 400×240 LCD more;
/// - a `.fit` row is as tall as its values' font (plus `pad`), `.fill` rows share what is left;
///   when the fitted rows and the fill rows' minimums do not fit, every row gets an equal share;
/// - a rule separates rows, with a blank pixel above it (and below it when the row under it has
///   captions on top) while the rows' minimums leave room, else the rules sit tight;
/// - a row's cells split its width evenly, with a vertical rule between them (not on compact
///   panels, where a row is too short for a divider to read as one);
/// - spacing and rules are in 128×64 pixels and scale with the panel (`PanelGeometry.px`), the
///   fonts come from the panel's `FontSet`.
///
/// ```swift
/// PageDesign("RIDE", [
///     .fit(pad: 2, [.init(.timer, .huge, label: .none, compact: .init(.large, .left))]),
///     .fill([.init(.metric(.speed), .large, compact: .init(.large, .left)),
///            .init(.metric(.distance), .large, compact: .init(.large, .left))]),
///     .fill([.init(.metric(.heartRate), .large), .init(.metric(.power), .large)], in: .large),
/// ])
/// ```
public struct PageDesign: Sendable, Hashable {
    public var name: String
    public var rows: [Row]
    /// Pixels (128×64 pixels, scaled) the rules and each row's last cell keep clear of the right
    /// edge of the running area.
    public var trailingInset: Int

    public init(_ name: String, trailingInset: Int = 0, _ rows: [Row]) {
        self.name = name
        self.rows = rows
        self.trailingInset = trailingInset
    }

    /// A field's value size and caption placement.
    public struct Style: Sendable, Hashable {
        public var size: FieldSize
        public var label: LabelPlacement
        public init(_ size: FieldSize, _ label: LabelPlacement) {
            self.size = size
            self.label = label
        }
    }

    /// One field of a row.
    public struct Cell: Sendable, Hashable {
        public var content: FieldContent
        public var style: Style
        /// The style on a compact panel, when it differs (a caption left of the value).
        public var compact: Style?
        public var classes: SizeClasses

        public init(_ content: FieldContent, _ size: FieldSize, label: LabelPlacement = .top, in classes: SizeClasses = .all,
                    compact: Style? = nil) {
            self.content = content
            style = Style(size, label)
            self.compact = compact
            self.classes = classes
        }

        public func style(on c: SizeClass) -> Style { c == .compact ? compact ?? style : style }
    }

    public enum Height: Sendable, Hashable {
        /// The values' font height (and a caption on top) plus `pad` (128×64 pixels, scaled).
        case fit(pad: Int)
        /// A share of what the fitted rows leave.
        case fill
    }

    public struct Row: Sendable, Hashable {
        public var cells: [Cell]
        public var graphic: PageGraphic?
        public var height: Height
        public var classes: SizeClasses

        public init(cells: [Cell], graphic: PageGraphic? = nil, height: Height, classes: SizeClasses = .all) {
            self.cells = cells
            self.graphic = graphic
            self.height = height
            self.classes = classes
        }

        public static func fit(pad: Int = 0, _ cells: [Cell], in classes: SizeClasses = .all) -> Row {
            Row(cells: cells, height: .fit(pad: pad), classes: classes)
        }

        public static func fill(_ cells: [Cell], in classes: SizeClasses = .all) -> Row {
            Row(cells: cells, height: .fill, classes: classes)
        }

        /// A graphic filling its row.
        public static func graphic(_ g: PageGraphic, in classes: SizeClasses = .all) -> Row {
            Row(cells: [], graphic: g, height: .fill, classes: classes)
        }
    }

    /// The least height of a graphic row (128×64 pixels, scaled).
    public static let graphicRowMinPx = 16

    /// The rows shown on a panel of size class `c`, each with its cells shown there.
    private func shownRows(_ c: SizeClass) -> [Row] {
        var shown: [Row] = []
        for row in rows where row.classes.contains(c) {
            var r = row
            r.cells = row.cells.filter { $0.classes.contains(c) }
            if r.graphic != nil || !r.cells.isEmpty { shown.append(r) }
        }
        return shown
    }

    /// A cell's style on `c` with its value `smaller` sizes down (never below `.medium`).
    private func style(_ cell: Cell, on c: SizeClass, smaller: Int) -> Style {
        var s = cell.style(on: c)
        s.size = FieldSize(rawValue: max(0, s.size.rawValue - smaller)) ?? .medium
        return s
    }

    /// The least height of a row: its values' font and a caption on top.
    private func minimum(_ r: Row, _ g: PanelGeometry, smaller: Int) -> Int {
        if r.graphic != nil { return g.px(Self.graphicRowMinPx) }
        var m = 0
        for cell in r.cells {
            let s = style(cell, on: g.sizeClass, smaller: smaller)
            m = max(m, g.fonts.digits(s.size).height + (s.label == .top ? g.fonts.label.height : 0))
        }
        return m
    }

    /// Whether every row of the page gets its least height in `height` pixels (rules drawn
    /// tight), with the values `smaller` sizes down.
    public func fits(_ g: PanelGeometry, height: Int, smaller: Int = 0) -> Bool {
        let shown = shownRows(g.sizeClass)
        return shown.map { minimum($0, g, smaller: smaller) }.reduce(0, +) + max(0, shown.count - 1) * g.px(1) <= height
    }

    /// The page placed on `geometry`'s panel, in `area` (the running area by default), its
    /// values `smaller` sizes down (a page laid out above the status line). Runs once per panel
    /// and page when the layouts are made, never per frame.
    public func layout(_ g: PanelGeometry, in area: Rect? = nil, smaller: Int = 0) -> PageLayout {
        let area = area ?? g.runningArea
        let c = g.sizeClass
        let shown = shownRows(c)
        guard !shown.isEmpty else { return PageLayout(name: name, fields: []) }
        let n = shown.count
        let rule = g.px(1)
        func captionOnTop(_ r: Row) -> Bool { r.cells.contains { $0.style(on: c).label == .top } }
        func minimum(_ r: Row) -> Int { self.minimum(r, g, smaller: smaller) }
        let mins = shown.map(minimum)
        // Rules with their blank pixels while the rows' minimums leave room, else tight.
        var spacedCost = 0
        for i in 1..<max(1, n) { spacedCost += rule + g.px(1) + (captionOnTop(shown[i]) ? g.px(1) : 0) }
        let spaced = mins.reduce(0, +) + spacedCost <= area.height
        let available = area.height - (spaced ? spacedCost : (n - 1) * rule)
        // Heights: fitted rows as tall as they need, fill rows share the rest; if that does not
        // fit, equal shares. The remainder of a division goes to the last row sharing.
        var heights = Array(repeating: 0, count: n)
        var fitted = 0, fillMins = 0, fills = 0
        for (i, r) in shown.enumerated() {
            if case .fit(let pad) = r.height { heights[i] = mins[i] + g.px(pad); fitted += heights[i] } else { fillMins += mins[i]; fills += 1 }
        }
        if fitted + fillMins <= available && fills > 0 {
            let share = (available - fitted) / fills
            var last = 0
            for (i, r) in shown.enumerated() where r.height == .fill { heights[i] = share; last = i }
            heights[last] += available - fitted - share * fills
        } else if fitted + fillMins <= available {
            heights[n - 1] += available - fitted
        } else {
            for i in 0..<n { heights[i] = available / n }
            heights[n - 1] += available - available / n * n
        }
        // Place them.
        let inset = g.px(trailingInset)
        let right = area.maxX - inset
        var fields: [Field] = []
        var rules: [Rect] = []
        var graphics: [PlacedGraphic] = []
        var y = area.y
        for (i, r) in shown.enumerated() {
            let top = y, h = heights[i]
            y += h
            var ruleBottom = y
            if i < n - 1 {
                if spaced { y += g.px(1) }
                rules.append(Rect(x: area.x, y: y, width: right - area.x, height: rule))
                y += rule
                ruleBottom = y
                if spaced && captionOnTop(shown[i + 1]) { y += g.px(1) }
            }
            if let graphic = r.graphic {
                graphics.append(PlacedGraphic(graphic, Rect(x: area.x, y: top, width: right - area.x, height: h)))
                continue
            }
            // Cells: split at area.x + k·width/count; a vertical rule ends each but the last, a
            // blank pixel either side of it.
            let count = r.cells.count
            for (k, cell) in r.cells.enumerated() {
                let start = area.x + k * area.width / count
                let end = area.x + (k + 1) * area.width / count
                let x0 = k == 0 ? start : start + g.px(1)
                let x1 = k == count - 1 ? right : end - rule - g.px(1)
                let s = style(cell, on: c, smaller: smaller)
                fields.append(Field(cell.content, Rect(x: x0, y: top, width: x1 - x0, height: h), size: s.size, label: s.label))
                if k < count - 1 && c != .compact {
                    rules.append(Rect(x: end - rule, y: top, width: rule, height: ruleBottom - top))
                }
            }
        }
        return PageLayout(name: name, fields: fields, rules: rules, graphics: graphics)
    }
}
