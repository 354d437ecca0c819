import AppCore
import Display
import RideModel

/// Draws the app core's `ScreenModel` into a framebuffer: idle, countdown, running pages, paused,
/// summary pages, the discard confirmation, and alert overlays on top of any of them.
///
/// Each frame is drawn from scratch into a private canvas and then copied into the caller's
/// framebuffer, which marks dirty only the pages whose bytes really changed. Nothing is
/// allocated per frame.
public struct ScreenRenderer: Sendable {
    public let layouts: ScreenLayouts
    public let summaryPages: [SummaryPage]
    var canvas: Framebuffer
    var text = TextBuffer()
    /// What the canvas shows when it holds a running page without overlay: the page index, then
    /// each field's text, 0xFF after each. Most inputs while riding are sensor frames that change
    /// nothing on the page shown (a power frame while page 1 shows speed, a speed frame that
    /// rounds to the same 0.1 km/h): the same key means the same pixels, so drawing is skipped.
    private var drawnKey: [UInt8]
    /// Bytes of `drawnKey` in use; -1 when the canvas holds anything else.
    private var drawnKeyCount = -1
    /// What the canvas shows when it holds a summary page: everything that page draws (the
    /// summary, the page, an overlay, a pairing code, powering off). Nil when it holds anything
    /// else. The summary stays on screen after a ride while the sensors keep sending: every
    /// frame (live values the summary does not show) drew the whole page again (its charts: 54 ms
    /// a sensor packet in the debug build in a TCG guest, 24 % of the loop's time during a dating).
    private var drawnSummary: SummaryKey?

    struct SummaryKey: Equatable, Sendable {
        var page: Int
        var summary: RideSummary?
        var overlay: Alert?
        var pairingCode: UInt32?
        var poweringOff: PowerOffReason?

        init?(_ model: ScreenModel) {
            guard case .summary(let page) = model.mode else { return nil }
            self.page = page
            summary = model.summary
            overlay = model.overlay
            pairingCode = model.pairingCode
            poweringOff = model.poweringOff
        }
    }
    var keyScratch: [UInt8]
    /// False: the battery's place is kept but left blank (tests tell its ink from the rest).
    var drawsBattery = true
    /// Longest key kept; a page whose key is longer is simply drawn every time.
    public static let drawnKeyBytesMax = 256

    public init(layouts: ScreenLayouts = .standard128x64, summaryPages: [SummaryPage] = SummaryPage.standard) {
        self.layouts = layouts
        self.summaryPages = summaryPages
        canvas = Framebuffer(width: layouts.width, height: layouts.height)
        drawnKey = Array(repeating: 0, count: Self.drawnKeyBytesMax)
        keyScratch = drawnKey
    }

    var width: Int { canvas.width }
    /// The rows a screen may draw in: the panel's, or those above the status line while a
    /// companion's pairing code is written there (`drawBelowPairingCode`).
    var height: Int { contentHeight ?? canvas.height }
    private var contentHeight: Int?
    /// The panel's size class, scale and fonts: every placement below is computed from it.
    var geometry: PanelGeometry { layouts.geometry }
    var fonts: FontSet { layouts.geometry.fonts }
    var tall: Bool { layouts.geometry.isTall }

    public mutating func render(_ model: ScreenModel, into framebuffer: inout Framebuffer) {
        draw(model)
        framebuffer.update(from: canvas)
    }

    /// `render` for a caller whose framebuffer holds exactly this renderer's previous output
    /// (DisplayPipeline, which writes its framebuffer only through here): when nothing visible
    /// changed it leaves the framebuffer alone instead of comparing it byte by byte. Returns
    /// whether anything was drawn.
    @discardableResult
    public mutating func renderChanges(_ model: ScreenModel, into framebuffer: inout Framebuffer) -> Bool {
        guard draw(model) else { return false }
        framebuffer.update(from: canvas)
        return true
    }

    /// Draws `model` into the canvas; false when the canvas already shows it (nothing drawn).
    @discardableResult
    private mutating func draw(_ model: ScreenModel) -> Bool {
        if case .running(let page) = model.mode, model.overlay == nil, model.pairingCode == nil, model.poweringOff == nil {
            drawnSummary = nil
            if runningPageUnchanged(page, model) { return false }
        } else {
            drawnKeyCount = -1
            let key = SummaryKey(model)
            if let key, key == drawnSummary { return false }
            drawnSummary = key
        }
        canvas.clear()
        drawBelowPairingCode(model)
        if let code = model.pairingCode {
            // Nothing the rider did not start takes the screen (issue 27): the code fills it only
            // on the idle screen; while paused it is in the banner (drawPaused); anywhere else it
            // is the status line at the foot, and the screen is laid out above it.
            if let line = pairingCodeFrame(model) { drawPairingStatusLine(code, in: line) } else if case .idle = model.mode { drawPairingCode(code) }
        }
        if let reason = model.poweringOff { drawPoweringOff(reason, model) }
        return true
    }

    /// Where a pairing code is written as a status line (nil: none, or it fills the idle screen,
    /// or it is in the paused banner).
    func pairingCodeFrame(_ model: ScreenModel) -> Rect? {
        guard model.pairingCode != nil else { return nil }
        switch model.mode {
        case .idle, .paused: return nil
        default: return geometry.statusLine
        }
    }

    /// The screen and any alert, laid out above the pairing code's status line when there is one
    /// (a running page's layouts already are: `ScreenLayouts.statusLinePages`).
    mutating func drawBelowPairingCode(_ model: ScreenModel) {
        let above = pairingCodeFrame(model)?.y
        if case .running = model.mode { contentHeight = nil } else { contentHeight = above }
        defer { contentHeight = nil }
        switch model.mode {
        case .idle: drawIdle(model)
        case .countdown(let n): drawCountdown(n, model)
        case .running(let page): drawRunning(page: page, model)
        case .paused: drawPaused(model)
        case .summary(let page): drawSummary(page: page, model)
        case .confirmDiscard: drawConfirmDiscard()
        case .sensors: drawSensors(model.sensorsMenu)
        case .courses: drawCourses(model.coursesMenu, model)
        }
        contentHeight = above
        if let alert = model.overlay { drawOverlay(alert) }
    }

    // MARK: Running

    /// Whether the canvas already shows running page `page` with these values; if not, keeps
    /// the new key (the caller draws it).
    private mutating func runningPageUnchanged(_ page: Int, _ model: ScreenModel) -> Bool {
        let pages = model.radarShown ? layouts.radarRunningPages : layouts.runningPages
        guard !pages.isEmpty else { drawnKeyCount = -1; return false }
        if let nav = navigationPageIndex(page, model) {
            keyScratch[0] = UInt8(truncatingIfNeeded: 0x80 | nav)
            var n = 1
            if model.radarShown { n = appendRadarKey(model, at: n, column: radarColumn(model)) }
            for graphic in layouts.navigationPages[nav].graphics { n = appendGraphicKey(graphic.kind, model, at: n) }
            n = appendBatteryKey(model, at: n)
            return keyUnchanged(n)
        }
        let index = ((page % pages.count) + pages.count) % pages.count
        keyScratch[0] = UInt8(truncatingIfNeeded: index)
        var n = 1
        if model.radarShown {
            // The column's key: at most 5 bytes and 3 per vehicle.
            guard n + 5 + 3 * RadarPicture.targetsMax <= Self.drawnKeyBytesMax else { drawnKeyCount = -1; return false }
            n = appendRadarKey(model, at: n, column: radarColumn(model))
        }
        for graphic in pages[index].graphics { n = appendGraphicKey(graphic.kind, model, at: n) }
        n = appendBatteryKey(model, at: n)
        for field in pages[index].fields {
            ValueFormat.write(field.content, of: model, into: &text)
            guard n + text.count + 1 <= Self.drawnKeyBytesMax else { drawnKeyCount = -1; return false }
            for i in 0..<text.count { keyScratch[n + i] = text[i] }
            n += text.count
            keyScratch[n] = 0xFF
            n += 1
        }
        return keyUnchanged(n)
    }

    /// Whether the key just written (`n` bytes of `keyScratch`) is the one drawn; if not, keeps it.
    private mutating func keyUnchanged(_ n: Int) -> Bool {
        if n == drawnKeyCount {
            var same = true
            for i in 0..<n where keyScratch[i] != drawnKey[i] { same = false; break }
            if same { return true }
        }
        swap(&drawnKey, &keyScratch)
        drawnKeyCount = n
        return false
    }

    private mutating func drawRunning(page: Int, _ model: ScreenModel) {
        let pages = model.radarShown ? (model.pairingCode == nil ? layouts.radarRunningPages : layouts.radarStatusLinePages)
            : (model.pairingCode == nil ? layouts.runningPages : layouts.statusLinePages)
        guard !pages.isEmpty else { return }
        // The pages the rider can reach (the climbing and map pages only with GPS or a barometer;
        // the navigation pages while a course is loaded), and the battery's gauge below their
        // dots: the page's rules, graphics and fields end left of it.
        let nav = navigationPageIndex(page, model)
        let index = ((page % pages.count) + pages.count) % pages.count
        let reachable = max(1, model.runningPageCount)
        let dots = nav != nil || model.navigation.course != nil ? reachable : min(pages.count, reachable)
        let gauge = model.battery == nil ? nil : runningGauge(dots: dots)
        let keepOut = gauge.map { runningGaugeKeepOut($0.gauge) }
        if let nav {
            drawPage(layouts.navigationPages(radar: model.radarShown, statusLine: model.pairingCode != nil)[nav], model, keepOut: keepOut)
        } else {
            drawPage(pages[index], model, keepOut: keepOut)
        }
        if model.radarShown { drawRadarColumn(radarColumn(model), model) }
        drawPageDots(nav == nil ? index : page, of: dots, pitch: gauge?.dotPitch)
        if let gauge { drawRunningBattery(model, in: gauge.gauge) }
    }

    /// Draws any page layout: the separator lines, the graphics, then each field the same way;
    /// each ends left of `keepOut` (the battery's gauge) where it reaches into it.
    public mutating func drawPage(_ layout: PageLayout, _ model: ScreenModel, keepOut: Rect? = nil) {
        for rule in layout.rules { canvas.fill(Self.trimmed(rule, leftOf: keepOut)) }
        for var graphic in layout.graphics {
            graphic.frame = Self.trimmed(graphic.frame, leftOf: keepOut)
            drawGraphic(graphic, model)
        }
        for var field in layout.fields {
            field.frame = Self.trimmed(field.frame, leftOf: keepOut)
            drawField(field, model)
        }
    }

    /// One graphic of a page in its frame.
    mutating func drawGraphic(_ graphic: PlacedGraphic, _ model: ScreenModel) {
        switch graphic.kind {
        case .track:
            // With a course: the course around the rider (NavigationScreens.swift).
            if model.navigation.course != nil { drawCourseMap(in: graphic.frame, model) } else { drawMap(in: graphic.frame, model) }
        case .navigation: drawNavigation(in: graphic.frame, model)
        case .courseProfile: drawProfile(in: graphic.frame, model)
        }
    }

    /// What makes a graphic look different, appended to the page's key (a page whose fields did
    /// not change still redraws when its graphic would). Returns the new key length.
    mutating func appendGraphicKey(_ kind: PageGraphic, _ model: ScreenModel, at n: Int) -> Int {
        switch kind {
        case .track: model.navigation.course == nil ? appendMapKey(model, at: n) : appendNavigationKey(model, at: appendMapKey(model, at: n))
        case .navigation, .courseProfile: appendNavigationKey(model, at: n)
        }
    }

    private mutating func drawField(_ field: Field, _ model: ScreenModel) {
        ValueFormat.write(field.content, of: model, into: &text)
        drawFieldValue(field)
    }

    /// How a field's value of `count` characters is set: its font (the field's size, or smaller
    /// down the panel's digit fonts until it fits), the caption's width left of it, the width
    /// the value may take, and whether it fits there (else it is clipped to the field).
    func valueSetting(_ field: Field, count: Int) -> (font: Font, label: String, labelWidth: Int, available: Int, fits: Bool) {
        func setting(_ label: String) -> (font: Font, label: String, labelWidth: Int, available: Int, fits: Bool) {
            let labelWidth = field.label == .left ? fonts.label.widthPx(count: label.utf8.count) + geometry.px(2) : 0
            // Values keep 2 px from the field's right edge (separator lines, neighbours).
            let available = field.frame.width - labelWidth - geometry.px(2)
            var level = fonts.digitsLevel(field.size)
            while fonts.digits[level].widthPx(count: count) > available, level > 0 { level -= 1 }
            let font = fonts.digits[level]
            return (font, label, labelWidth, available, font.widthPx(count: count) <= available)
        }
        let long = setting(field.content.label)
        // A caption beside the value gives way to its short form when the value does not fit.
        guard !long.fits, field.label == .left, let short = field.content.shortLabel else { return long }
        let s = setting(short)
        return s.fits || s.font.width > long.font.width ? s : long
    }

    /// Draws the field's caption and the value in `text`; nothing leaves the field's frame.
    mutating func drawFieldValue(_ field: Field) {
        let labelFont = fonts.label
        let (font, label, labelWidth, available, _) = valueSetting(field, count: text.count)
        let valueY: Int = field.label == .top
            ? field.frame.maxY - font.height - 1
            : field.frame.y + (field.frame.height - font.height + 1) / 2
        canvas.drawText(text, font: font, in: Rect(x: field.frame.x + labelWidth, y: valueY, width: available, height: font.height),
                        alignment: .right, clip: field.frame)
        switch field.label {
        case .none: break
        case .top: canvas.drawText(label.utf8, font: labelFont, x: field.frame.x, y: field.frame.y - 1, clip: field.frame)
        // Centre the caption's capitals and digits (rows labelCapTop... of its font) on the value.
        case .left:
            canvas.drawText(label.utf8, font: labelFont, x: field.frame.x,
                            y: valueY + (font.height - fonts.labelCapRows) / 2 - fonts.labelCapTop, clip: field.frame)
        }
    }

    /// Draws one field with `value` as its text, alone on a clear canvas (the property tests).
    mutating func drawFieldAlone(_ field: Field, value: [UInt8]) -> Framebuffer {
        canvas.clear()
        drawnKeyCount = -1
        text.clear()
        for c in value { text.append(c) }
        drawFieldValue(field)
        return canvas
    }

    /// Page k of n as dots down the right edge: the current one a square, the others a dot in
    /// its middle.
    private mutating func drawPageDots(_ index: Int, of count: Int, pitch given: Int? = nil) {
        guard count > 1 else { return }
        let side = geometry.pageDotPx, dot = geometry.px(1)
        let x = width - side
        // Closer together when more pages than fit at the usual pitch (the navigation pages on a
        // 32-row panel), or than leave the battery's gauge room (`runningGauge`).
        let pitch = given ?? max(side, min(geometry.pageDotPitch, (height - geometry.px(2)) / count))
        for i in 0..<count {
            let y = geometry.px(2) + i * pitch
            if i == index {
                canvas.fill(Rect(x: x, y: y, width: side, height: side))
            } else {
                canvas.fill(Rect(x: x + (side - dot) / 2, y: y + (side - dot) / 2, width: dot, height: dot))
            }
        }
    }

    // MARK: Idle and countdown

    private mutating func drawIdle(_ model: ScreenModel) {
        let title = fonts.title, small = fonts.text
        canvas.drawText("READY", font: title, x: 0, y: 0)
        if model.storage != .ok {
            canvas.drawText(storageWord(model.storage), font: small, in: Rect(x: 0, y: geometry.px(2), width: width, height: small.height),
                            alignment: .right)
        }
        guard tall else {
            // Beside READY when they fit there, else under it from the left edge.
            let beside = title.widthPx(count: 5) + geometry.px(8)
            let room = expectedSensorCount(model) * boxStep(model) - (boxStep(model) - sensorBox.width)
            drawSensorBoxes(y: title.height + geometry.px(2), x: room <= width - beside ? beside : 0, model)
            drawIdleBattery(model)
            return
        }
        canvas.horizontalLine(x: 0, y: title.height, length: width, thickness: geometry.px(1))
        let boxesY = title.height + geometry.px(3)
        drawSensorBoxes(y: boxesY, x: 0, model)
        drawSensorBatteries(y: boxesY + sensorBox.height - geometry.px(1), x: 0, model)
        // The status line and the hint sit at the bottom.
        sensorStatusLine(model)
        canvas.drawText(text, font: small, x: 0, y: height - 2 * small.height + geometry.px(1))
        canvas.drawText("START to ride", font: small, x: 0, y: height - small.height)
        drawIdleBattery(model)
    }

    /// A sensor box: four characters of the list font, one pixel taller.
    var sensorBox: (width: Int, height: Int) { (fonts.list.widthPx(count: 4), fonts.list.height + geometry.px(1)) }

    /// Each expected sensor's last reported battery level under its box ("82%"; blank when the
    /// sensor has not said).
    private mutating func drawSensorBatteries(y: Int, x: Int, _ model: ScreenModel) {
        var bx = x
        for role in SensorRole.allCases {
            let state = model.sensor(role)
            guard state != .notConfigured else { continue }
            let cell = Rect(x: bx, y: y, width: sensorBox.width, height: fonts.text.height)
            if role == .gps {
                writeSatellites(model.gps)
                canvas.drawText(text, font: fonts.text, in: cell, alignment: .center)
            } else if let b = model.sensorBatteryPercent[Int(role.rawValue)] {
                text.clear()
                text.append(integer: Int64(max(0, min(100, b))))
                text.append(UInt8(ascii: "%"))
                canvas.drawText(text, font: fonts.text, in: cell, alignment: .center)
            }
            bx += boxStep(model)
        }
    }

    /// The least healthy expected sensor in words, or that all are fine.
    private mutating func sensorStatusLine(_ model: ScreenModel) {
        text.clear()
        var worst: (SensorRole, SensorState)?
        var expected = 0
        for role in SensorRole.allCases {
            let state = model.sensor(role)
            guard state != .notConfigured else { continue }
            expected += 1
            if state != .connected, worst == nil || severity(state) > severity(worst!.1) { worst = (role, state) }
        }
        if expected == 0 { text.append("NO SENSORS SET UP"); return }
        guard let (role, state) = worst else {
            // All connected: the weakest battery under the alert level, else all is well.
            var low: (SensorRole, Int)?
            for role in SensorRole.allCases where model.sensor(role) != .notConfigured {
                if let b = model.sensorBatteryPercent[Int(role.rawValue)], b < AppCore.sensorBatteryLowPercent, low == nil || b < low!.1 { low = (role, b) }
            }
            guard let (r, b) = low else { text.append("SENSORS OK"); return }
            text.append(r.description)
            text.append(" BATTERY ")
            text.append(integer: Int64(b))
            text.append(UInt8(ascii: "%"))
            return
        }
        text.append(role.description)
        text.append(UInt8(ascii: " "))
        text.append(stateWord(state))
    }

    private func severity(_ s: SensorState) -> Int {
        switch s {
        case .notConfigured, .connected: 0
        case .stale: 1
        case .searching: 2
        case .lost: 3
        }
    }

    /// Expected sensors as boxes from `x` to the panel's right edge: filled = connected, outline
    /// = not (yet). Boxes that would not all fit are made narrower (their words clipped to them).
    private mutating func drawSensorBoxes(y: Int, x: Int, _ model: ScreenModel) {
        var bx = x
        var step = boxStep(model), boxWidth = sensorBox.width
        let count = expectedSensorCount(model), gap = step - boxWidth
        if count > 0 && count * step - gap > width - x {
            step = (width - x + gap) / count
            boxWidth = step - gap
        }
        for role in SensorRole.allCases {
            let state = model.sensor(role)
            guard state != .notConfigured else { continue }
            let box = Rect(x: bx, y: y, width: boxWidth, height: sensorBox.height)
            let connected = state == .connected
            if connected { canvas.fill(box) } else { canvas.strokeRect(box, thickness: geometry.px(1)) }
            if role == .gps { writeGpsBox(model.gps) } else { text.clear(); text.append(role.description) }
            canvas.drawText(text, font: fonts.list, in: Rect(x: box.x, y: box.y, width: box.width, height: fonts.list.height),
                            alignment: .center, on: !connected, clip: box)
            if state == .lost {
                for k in 0..<geometry.px(1) { canvas.line(x0: box.x + k, y0: box.maxY - 1, x1: box.maxX - 1, y1: box.y + k) }
            }
            bx += step
        }
    }

    private mutating func drawCountdown(_ seconds: Int, _ model: ScreenModel) {
        text.clear()
        text.append(integer: Int64(max(0, seconds)))
        let small = fonts.text
        var digits = fonts.digits(.huge)
        if tall {
            // Above a pairing code's status line (`height`), the digit and the boxes close up.
            var digitsY = small.height + geometry.px(2)
            var bottomY = height - sensorBox.height - geometry.px(4)
            if bottomY < digitsY + digits.height {
                digitsY = small.height
                bottomY = max(digitsY + digits.height + geometry.px(1), height - sensorBox.height - geometry.px(1))
            }
            canvas.drawText("STARTING IN", font: small, in: Rect(x: 0, y: 0, width: width, height: small.height), alignment: .center)
            canvas.drawText(text, font: digits, in: Rect(x: 0, y: digitsY, width: width, height: digits.height),
                            alignment: .center)
            if expectedSensorCount(model) == 0 {
                canvas.drawText("NO SENSORS", font: small, in: Rect(x: 0, y: bottomY + sensorBox.height - small.height, width: width, height: small.height),
                                alignment: .center)
            } else {
                drawSensorBoxes(y: bottomY, x: (width - boxStep(model) * expectedSensorCount(model) + geometry.px(2)) / 2, model)
            }
        } else {
            // Above a pairing code's status line the digit is a size smaller and the boxes take
            // STARTING's place.
            if digits.height + geometry.px(3) > height { digits = fonts.digits(.large) }
            let x = geometry.px(4) + digits.width + geometry.px(8)
            canvas.drawText(text, font: digits, x: geometry.px(4), y: min(geometry.px(3), (height - digits.height) / 2))
            if small.height + geometry.px(4) + sensorBox.height <= height {
                canvas.drawText("STARTING", font: small, x: x, y: 0)
                drawSensorBoxes(y: small.height + geometry.px(4), x: x, model)
            } else {
                drawSensorBoxes(y: height - sensorBox.height, x: x, model)
            }
        }
    }

    func expectedSensorCount(_ model: ScreenModel) -> Int {
        var n = 0
        for role in SensorRole.allCases where model.sensor(role) != .notConfigured { n += 1 }
        return n
    }

    // MARK: Paused

    private mutating func drawPaused(_ model: ScreenModel) {
        let title = fonts.title, small = fonts.text
        let banner = Rect(x: 0, y: 0, width: width, height: title.height)
        canvas.fill(banner)
        text.clear()
        text.append(clockMs: model.timerMs)
        // A companion's pairing code takes the banner's word, never the timer's digits.
        var word = TextBuffer()
        if let code = model.pairingCode {
            word.append("PAIR ")
            word.append(integer: Int64(code), minimumDigits: 6)
        } else {
            word.append("PAUSED")
        }
        if tall {
            let digits = fonts.digits(.huge)
            let room = drawPausedBattery(model, banner: banner, word: title.widthPx(count: word.count))
            text.clear()
            text.append(clockMs: model.timerMs)
            canvas.drawText(word, font: title, in: Rect(x: 0, y: 0, width: room, height: banner.height), alignment: .center, on: false)
            canvas.drawText(text, font: digits, in: Rect(x: 0, y: banner.maxY + geometry.px(4), width: width, height: digits.height), alignment: .center)
            text.clear()
            text.append(clockMs: model.elapsedMs)
            // The elapsed time in the text font, or large digits where the panel has room.
            let value = geometry.sizeClass == .large ? fonts.digits(.large) : small
            let y = height - value.height - geometry.px(1)
            canvas.drawText("ELAPSED", font: small, x: 0, y: y + max(0, (value.height - small.height) / 2))
            canvas.drawText(text, font: value, in: Rect(x: 0, y: y, width: width, height: value.height), alignment: .right)
        } else {
            let digits = fonts.digits(.large)
            // The code in the text font, leaving the timer its room at the right.
            let wordFont = model.pairingCode == nil ? title : small
            canvas.drawText(word, font: wordFont, x: geometry.px(2), y: (banner.height - wordFont.height) / 2, on: false)
            // The battery's gauge at the banner's right end, the timer left of it.
            let room = model.battery == nil ? width - geometry.px(2) : drawPausedBattery(model, banner: banner, word: 0)
            text.clear()
            text.append(clockMs: model.timerMs)
            canvas.drawText(text, font: small, in: Rect(x: 0, y: geometry.px(2), width: room, height: small.height),
                            alignment: .right, on: false)
            text.clear()
            text.append(clockMs: model.elapsedMs)
            canvas.drawText("ELAPSED", font: small, x: 0, y: banner.maxY + geometry.px(2))
            canvas.drawText(text, font: digits, in: Rect(x: 0, y: height - digits.height, width: width, height: digits.height), alignment: .right)
        }
    }

    // MARK: Summary

    private mutating func drawSummary(page: Int, _ model: ScreenModel) {
        let count = max(1, summaryPages.count)
        let index = ((page % count) + count) % count
        let small = fonts.text, px1 = geometry.px(1)
        let banner = Rect(x: 0, y: 0, width: width, height: small.height - px1)
        canvas.fill(banner)
        let title = summaryPages.isEmpty ? "SUMMARY" : summaryPages[index].title
        canvas.drawText(title, font: small, x: px1, y: -px1, on: false)
        text.clear()
        if let s = model.summary {
            if s.recovered { text.append("RECOVERED ") }
            text.append(s.saved == false ? "DISCARDED " : "SAVED ")
        }
        text.append(integer: Int64(index + 1))
        text.append(UInt8(ascii: "/"))
        text.append(integer: Int64(count))
        canvas.drawText(text, font: small, in: Rect(x: 0, y: -px1, width: width - px1, height: small.height), alignment: .right, on: false)
        guard let summary = model.summary, !summaryPages.isEmpty else {
            let title = fonts.title
            canvas.drawText("--", font: title, in: Rect(x: 0, y: (height - title.height) / 2, width: width, height: title.height), alignment: .center)
            return
        }
        // Rows under the banner in the list font, spread over the page on a tall panel (a pixel
        // apart at least); overlapping their blank top and bottom rows on a compact one (two rows
        // in 22 px).
        let row = fonts.list
        var y = tall ? banner.maxY + px1 : banner.maxY - px1
        let items = summaryPages.isEmpty ? 1 : max(1, summaryPages[index].items.count)
        // Above a pairing code's status line (`height`) a tall panel's rows close up as a compact
        // one's; the last row's descenders stay above the line.
        let closeUp = !tall || (height - y) / items < row.height + px1
        if closeUp { y = banner.maxY - px1 }
        let rowPitch = closeUp ? max(row.height - geometry.px(2), tall ? (height - y) / items : 0) : (height - y) / items
        let rowsMax = (height - y) / rowPitch
        let charted = summaryPages.isEmpty || summaryPages[index].items.contains { if case .chart = $0 { true } else { $0 == .zoneBars } }
        if !charted, rowsMax > 0, y + (rowsMax - 1) * rowPitch + row.height > height { y -= px1 }
        for (i, item) in summaryPages[index].items.enumerated() where i < rowsMax {
            if item == .zoneBars {
                drawZoneBars(summary, top: y)
                return
            }
            if case .chart(let q) = item {
                SummaryChartView.draw(summary.charts, q, timerTimeMs: summary.timerTimeMs, top: y, geometry: geometry, height: height,
                                      into: &canvas, text: &text)
                return
            }
            item.write(summary, into: &text)
            canvas.drawText(item.label, font: row, x: 0, y: y)
            canvas.drawText(text, font: row, in: Rect(x: 0, y: y, width: width, height: row.height), alignment: .right)
            y += rowPitch
        }
    }

    /// Time in heart-rate zones (left half) and power zones (right half), one bar per zone.
    private mutating func drawZoneBars(_ s: RideSummary, top: Int) {
        let half = width / 2, gap = geometry.px(2)
        drawZoneChart("HR", s.heartRateZoneTimes, x: 0, width: half - gap, top: top)
        drawZoneChart("PWR", s.powerZoneTimes, x: half + gap, width: half - gap, top: top)
        canvas.fill(Rect(x: half, y: top, width: geometry.px(1), height: height - top))
    }

    private mutating func drawZoneChart(_ label: String, _ zones: ZoneTimes, x: Int, width chartWidth: Int, top: Int) {
        let small = fonts.text
        canvas.drawText(label, font: small, x: x, y: top)
        if zones.zoneCount == 0 || zones.totalMs == 0 {
            canvas.drawText("--", font: small, x: x + small.widthPx(count: 4), y: top)
            return
        }
        let chartTop = top + small.height
        canvas.barChart(Rect(x: x, y: chartTop, width: chartWidth, height: height - chartTop), values: zones.milliseconds, count: zones.zoneCount,
                        gapPx: geometry.px(1))
    }

    // MARK: Discard confirmation

    private mutating func drawConfirmDiscard() {
        let small = fonts.text
        // Above a pairing code's status line on a short panel: the banner in the text font, the
        // line under it closing up on its blank rows (as the summary's).
        let short = !tall && fonts.title.height + geometry.px(3) + small.height > height
        let title = short ? small : fonts.title
        let banner = Rect(x: 0, y: 0, width: width, height: short ? small.height - geometry.px(1) : title.height)
        canvas.fill(banner)
        canvas.drawText("DISCARD RIDE?", font: title, in: Rect(x: 0, y: short ? -geometry.px(1) : 0, width: width, height: title.height),
                        alignment: .center, on: false)
        if tall {
            let y = banner.maxY + geometry.px(8)
            canvas.drawText("START: delete it", font: small, x: geometry.px(4), y: y)
            canvas.drawText("LAP:   keep it", font: small, x: geometry.px(4), y: y + small.height + geometry.px(2))
        } else {
            let y = short ? banner.maxY - geometry.px(1) : banner.maxY + geometry.px(3)
            canvas.drawText("START=DELETE LAP=KEEP", font: small, in: Rect(x: 0, y: y, width: width, height: small.height), alignment: .center)
        }
    }

    // MARK: Alerts

    /// A light box with dark text over the middle of whatever is on screen.
    private mutating func drawOverlay(_ alert: Alert) {
        if case .cue(let type, let stage, let d, let name) = alert {
            drawCueOverlay(type, stage: stage, distanceM: d, name: name)
            return
        }
        writeAlert(alert)
        let title = fonts.title, px1 = geometry.px(1)
        let margin = geometry.px(tall ? 4 : 2)
        // Above a pairing code's status line (`height`) the box may be shorter, its words smaller.
        let boxHeight = min(title.height + geometry.px(tall ? 12 : 8), height - 2 * px1)
        let box = Rect(x: margin, y: (height - boxHeight) / 2, width: width - 2 * margin, height: boxHeight)
        canvas.fill(Rect(x: box.x - px1, y: box.y - px1, width: box.width + 2 * px1, height: box.height + 2 * px1), on: false)
        canvas.fill(box)
        canvas.strokeRect(box.insetBy(geometry.px(2)), on: false, thickness: px1)
        let titleFits = title.widthPx(count: text.count) <= box.width - geometry.px(8) && title.height + geometry.px(4) <= box.height
        let font: Font = titleFits ? title : fonts.text
        let y = box.y + (box.height - font.height) / 2
        canvas.drawText(text, font: font, in: Rect(x: box.x, y: y, width: box.width, height: font.height), alignment: .center, on: false)
    }

    /// A companion's pairing code: "PAIR" and six large digits, over everything else.
    private mutating func drawPairingCode(_ code: UInt32) {
        let small = fonts.text, px1 = geometry.px(1)
        let huge = fonts.digits(.huge), large = fonts.digits(.large)
        let boxHeight = tall ? geometry.px(3) + small.height + geometry.px(3) + huge.height + geometry.px(4) : height - geometry.px(4)
        let box = Rect(x: geometry.px(2), y: (height - boxHeight) / 2, width: width - geometry.px(4), height: boxHeight)
        canvas.fill(Rect(x: box.x - px1, y: box.y - px1, width: box.width + 2 * px1, height: box.height + 2 * px1), on: false)
        canvas.strokeRect(box, thickness: px1)
        text.clear()
        text.append("PAIR")
        if tall {
            canvas.drawText(text, font: small, in: Rect(x: box.x, y: box.y + geometry.px(3), width: box.width, height: small.height), alignment: .center)
        } else {
            canvas.drawText(text, font: small, x: box.x + geometry.px(4), y: box.y + (box.height - small.height) / 2)
        }
        text.clear()
        text.append(integer: Int64(code), minimumDigits: 6)
        if tall {
            let y = box.maxY - huge.height - geometry.px(4)
            canvas.drawText(text, font: huge, in: Rect(x: box.x, y: y, width: box.width, height: huge.height), alignment: .center)
        } else {
            let y = box.y + (box.height - large.height) / 2
            canvas.drawText(text, font: large, in: Rect(x: box.x, y: y, width: box.width - geometry.px(4), height: large.height), alignment: .right)
        }
    }

    /// A pairing code while the unit is not idle: "PAIR" and the six digits, inverted, in the
    /// status line the screen is laid out above (`ScreenLayouts.statusLinePages` for a running
    /// page, `height` for the others), so no figure is hidden.
    private mutating func drawPairingStatusLine(_ code: UInt32, in line: Rect) {
        text.clear()
        text.append("PAIR ")
        text.append(integer: Int64(code), minimumDigits: 6)
        canvas.fill(line)
        canvas.drawText(text, font: fonts.label, x: line.x + geometry.px(2), y: line.y + geometry.px(1) - fonts.labelCapTop,
                        on: false, clip: line)
    }

    /// The alert's words, written without building a String.
    private mutating func writeAlert(_ alert: Alert) {
        text.clear()
        switch alert {
        case .sensorLost(let r): text.append(r.description); text.append(" LOST")
        case .sensorBack(let r): text.append(r.description); text.append(" BACK")
        case .zoneDrift(let q, let above):
            text.append(q == .power ? "PWR " : "HR ")
            text.append(above ? "HIGH" : "LOW")
        case .backInZone(let q): text.append(q == .power ? "PWR IN ZONE" : "HR IN ZONE")
        case .lowStorage: text.append("STORAGE LOW")
        case .storageFull: text.append("STORAGE FULL")
        case .storageError: text.append("STORAGE ERROR")
        case .rideRecovered: text.append("RIDE RECOVERED")
        case .rideInProgress: text.append("RIDE IN PROGRESS")
        case .savingRide: text.append("SAVING RIDE")
        case .rideSaved: text.append("RIDE SAVED")
        case .rideNotSaved: text.append("RIDE NOT SAVED")
        case .rideDiscarded: text.append("RIDE DISCARDED")
        case .rideTableFull: text.append("RIDE FULL")
        case .lowSensorBattery(let r, let p):
            text.append(r.description); text.append(" BATTERY "); text.append(integer: Int64(p)); text.append(UInt8(ascii: "%"))
        case .vehicleBehind(let t): text.append(t == .fastApproach ? "VEHICLE FAST" : "VEHICLE")
        case .roadClear: text.append("ROAD CLEAR")
        case .offCourse: text.append("OFF COURSE")
        case .wrongWay: text.append("WRONG WAY")
        case .backOnCourse: text.append("BACK ON COURSE")
        case .cue(let t, _, let d, _): text.append(t.word); text.append(UInt8(ascii: " ")); text.append(integer: Int64(d)); text.append(" M")
        case .climbStart(let n, let count, let l, let g):
            text.append("CLIMB "); text.append(integer: Int64(n)); text.append(UInt8(ascii: "/")); text.append(integer: Int64(count))
            text.append(UInt8(ascii: " ")); text.append(Double(l) / 1000, decimals: 1); text.append("K ")
            text.append(Double(g) / 10, decimals: 1); text.append(UInt8(ascii: "%"))
        case .courseFinished: text.append("COURSE DONE")
        case .lowBattery(let p): text.append("BATTERY "); text.append(integer: Int64(p)); text.append(UInt8(ascii: "%"))
        case .batteryEmpty: text.append("BATTERY EMPTY")
        case .poweringOff: text.append("POWERING OFF")
        case .sensorConfigUnreadable(let line):
            if line > 0 { text.append("CONFIG ERR LINE "); text.append(integer: Int64(line)) } else { text.append("SENSOR CONFIG ERR") }
        }
    }

    // MARK: Words

    private func stateWord(_ s: SensorState) -> String {
        switch s {
        case .notConfigured: "OFF"
        case .searching: "SEARCHING"
        case .connected: "OK"
        case .stale: "NO DATA"
        case .lost: "LOST"
        }
    }

    private func storageWord(_ s: StorageCondition) -> String {
        switch s {
        case .ok: ""
        case .low: "STORAGE LOW"
        case .full: "STORAGE FULL"
        case .failing: "STORAGE ERR"
        }
    }
}
