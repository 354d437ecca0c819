import AppCore
import Display
import Navigation
import RideModel

/// Where each part of the navigation pages goes, from the panel's size (one place per page:
/// docs/screens.md). At 128×64 the arrow is a 40-pixel square at the left; on a 32-row panel
/// it shrinks to the panel's height and the bottom row moves to the right column.
struct NavigationLayout {
    var arrow: Rect
    /// The right column: distance (large digits), name, the cue after.
    var distance: Rect
    var name: Rect
    var then: Rect
    /// The bottom row: distance and time to go.
    var bottom: Rect?
    var rule: Rect?
    /// The profile chart.
    var chart: Rect

    init(width: Int, height: Int) {
        let usable = width - 6 // the page dots keep the right edge
        if height >= 64 {
            let arrowSide = min(40, height - 24)
            arrow = Rect(x: 0, y: 1, width: arrowSide, height: arrowSide)
            let x = arrowSide + 4
            distance = Rect(x: x, y: 1, width: usable - x, height: 15)
            name = Rect(x: x, y: 18, width: usable - x, height: 12)
            then = Rect(x: x, y: 30, width: usable - x, height: 12)
            rule = Rect(x: 0, y: height - 14, width: usable, height: 1)
            bottom = Rect(x: 0, y: height - 13, width: usable, height: 12)
            chart = Rect(x: 0, y: 25, width: usable, height: height - 25)
        } else {
            let arrowSide = height - 2
            arrow = Rect(x: 0, y: 1, width: arrowSide, height: arrowSide)
            let x = arrowSide + 3
            distance = Rect(x: x, y: 0, width: usable - x, height: 15)
            name = Rect(x: x, y: 17, width: usable - x, height: 12)
            then = Rect(x: x, y: 17, width: 0, height: 0)
            rule = nil
            bottom = nil
            chart = Rect(x: 0, y: 13, width: usable, height: height - 13)
        }
    }
}

extension ScreenRenderer {
    /// Whether running page `page` is a navigation page (index among them), given the model.
    func navigationPageIndex(_ page: Int, _ model: ScreenModel) -> Int? {
        guard model.navigation.course != nil else { return nil }
        let first = model.runningPageCount - NavigationPages.count
        return page >= first && page < model.runningPageCount ? page - first : nil
    }

    /// The key of a navigation page: its index, the navigation view, the fix and the clock shown.
    mutating func appendNavigationKey(_ model: ScreenModel, page: Int, at n: Int) -> Int {
        var h = Hasher()
        h.combine(page)
        h.combine(model.navigation)
        h.combine(model.gps.mode)
        var v = UInt64(bitPattern: Int64(h.finalize()))
        var k = n
        for _ in 0..<8 {
            keyScratch[k] = UInt8(truncatingIfNeeded: v)
            v >>= 8
            k += 1
        }
        return k
    }

    mutating func drawNavigationPage(_ index: Int, _ model: ScreenModel) {
        let layout = NavigationLayout(width: width, height: height)
        if index == 0 { drawNavigation(layout, model) } else { drawProfile(layout, model) }
    }

    // MARK: NAV

    /// The cue (arrow, distance, name, the one after), or the way back to the course, and the
    /// distance and time to go.
    mutating func drawNavigation(_ l: NavigationLayout, _ model: ScreenModel) {
        let v = model.navigation
        if let bottom = l.bottom, let rule = l.rule {
            canvas.fill(rule)
            text.clear()
            text.append("TO GO ")
            appendDistance(v.distanceToGoM)
            canvas.drawText(text, font: .small, x: bottom.x, y: bottom.y)
            if let s = v.secondsToGo, s.isFinite, s < 360_000 {
                text.clear()
                text.append(clockMs: Int64(s / 60) * 60_000)
                text.clear()
                let minutes = Int64(s / 60)
                text.append(integer: minutes / 60)
                text.append(UInt8(ascii: ":"))
                text.append(integer: minutes % 60, minimumDigits: 2)
                canvas.drawText(text, font: .small, in: bottom, alignment: .right)
            }
        }
        let away = v.state == .offCourse || v.state == .wrongWay || v.state == .acquiring
        if v.gpsLost || (v.state == .acquiring && v.latDeg == nil) {
            drawBanner(l, v.gpsLost ? "GPS LOST" : "WAITING FOR GPS")
            drawCourseName(l, v)
            return
        }
        if v.state == .finished {
            drawBanner(l, "COURSE DONE")
            drawCourseName(l, v)
            return
        }
        if away {
            drawBanner(l, v.state == .offCourse ? "OFF COURSE" : v.state == .wrongWay ? "WRONG WAY" : "TO COURSE")
            // The way back: relative to the heading when the rider moves, else north-up with "N".
            if let b = v.backBearingDeg {
                let relative = v.headingDeg.map { b - $0 } ?? b
                drawDirectionArrow(in: l.arrow, degrees: relative)
                if v.headingDeg == nil { canvas.drawText("N", font: .small, x: l.arrow.x, y: l.arrow.y - 2) }
            }
            text.clear()
            appendDistance(v.backDistanceM)
            canvas.drawText(text, font: .medium, in: Rect(x: l.name.x, y: l.name.y - 2, width: l.name.width, height: 16), alignment: .left)
            return
        }
        guard let cue = v.cue else {
            drawDirectionArrow(in: l.arrow, degrees: 0)
            text.clear()
            text.append("NO MORE CUES")
            canvas.drawText(text, font: .small, x: l.distance.x, y: l.distance.y + 2)
            drawCourseName(l, v)
            return
        }
        drawCueArrow(in: l.arrow, cue.type, now: cue.stage == .now)
        text.clear()
        if cue.stage == .now { text.append("NOW") } else { appendDistance(cue.distanceM, digitsOnly: true) }
        let font: Font = cue.stage == .now ? .medium : .digitsLarge
        let drawnX = canvas.drawText(text, font: font, in: Rect(x: l.distance.x, y: l.distance.y, width: l.distance.width, height: 15), alignment: .left)
        if cue.stage != .now {
            let unitX = drawnX + font.widthPx(count: text.count) + 2
            text.clear()
            appendDistanceUnit(cue.distanceM)
            canvas.drawText(text, font: .small, x: unitX, y: l.distance.y + 3)
        }
        text.clear()
        text.append(cue.name.isEmpty ? cue.type.word : cue.name)
        clip(to: l.name.width / Font.small.width)
        canvas.drawText(text, font: .small, x: l.name.x, y: l.name.y)
        if let next = v.followingCue, l.then.width > 0 {
            text.clear()
            text.append("THEN ")
            text.append(next.type.word)
            text.append(UInt8(ascii: " "))
            appendDistance(next.distanceM - cue.distanceM)
            clip(to: l.then.width / Font.small.width)
            canvas.drawText(text, font: .small, x: l.then.x, y: l.then.y)
        }
    }

    /// A banner across the right column (inverted), e.g. "OFF COURSE".
    mutating func drawBanner(_ l: NavigationLayout, _ words: String) {
        let r = Rect(x: l.distance.x - 1, y: l.distance.y, width: l.distance.width + 1, height: 14)
        canvas.fill(r)
        canvas.drawText(words, font: .small, in: Rect(x: r.x, y: r.y + 1, width: r.width, height: 12), alignment: .center, on: false)
    }

    mutating func drawCourseName(_ l: NavigationLayout, _ v: NavigationView) {
        text.clear()
        text.append(v.course?.name ?? "")
        clip(to: (l.name.width + l.name.x) / Font.small.width)
        canvas.drawText(text, font: .small, x: 0, y: l.name.y + (l.then.width > 0 ? 12 : 0))
    }

    /// Keeps the first `n` characters of `text`.
    mutating func clip(to n: Int) {
        guard text.count > n else { return }
        var kept = TextBuffer()
        for i in 0..<max(0, n) { kept.append(text[i]) }
        text = kept
    }

    /// "350 M", "1.2 KM", "12 KM" (the digits only with `digitsOnly`).
    mutating func appendDistance(_ m: Double?, digitsOnly: Bool = false) {
        guard let m, m.isFinite, m >= 0, m < 10_000_000 else { text.appendMissing(); return }
        if m < 1_000 {
            text.append(integer: Int64((m / 10).rounded()) * 10)
        } else if m < 100_000 {
            text.append(m / 1000, decimals: 1)
        } else {
            text.append(integer: Int64((m / 1000).rounded()))
        }
        if !digitsOnly {
            text.append(UInt8(ascii: " "))
            appendDistanceUnit(m)
        }
    }

    mutating func appendDistanceUnit(_ m: Double) { text.append(m < 1_000 ? "M" : "KM") }

    // MARK: Arrows

    /// Unit vector of a compass angle (0 = up on the screen, clockwise), as screen dx, dy.
    func direction(_ degrees: Double) -> (dx: Double, dy: Double) {
        let r = degrees * Double.pi / 180
        return (ScreenCatalogue.cosine(r - Double.pi / 2), -ScreenCatalogue.cosine(r))
    }

    /// A thick line (3 px).
    mutating func thickLine(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double) {
        for (ox, oy) in [(0, 0), (1, 0), (0, 1), (-1, 0), (0, -1)] {
            canvas.line(x0: Int(x0.rounded()) + ox, y0: Int(y0.rounded()) + oy, x1: Int(x1.rounded()) + ox, y1: Int(y1.rounded()) + oy)
        }
    }

    mutating func arrowHead(atX x: Double, y: Double, degrees: Double, size: Double) {
        for side in [-150.0, 150.0] {
            let d = direction(degrees + side)
            thickLine(x, y, x + d.dx * size, y + d.dy * size)
        }
    }

    /// A straight arrow through the box's centre pointing `degrees` (0 = up).
    mutating func drawDirectionArrow(in box: Rect, degrees: Double) {
        let cx = Double(box.x) + Double(box.width - 1) / 2, cy = Double(box.y) + Double(box.height - 1) / 2
        let r = Double(min(box.width, box.height)) / 2 - 3
        let d = direction(degrees)
        thickLine(cx - d.dx * r, cy - d.dy * r, cx + d.dx * r, cy + d.dy * r)
        arrowHead(atX: cx + d.dx * r, y: cy + d.dy * r, degrees: degrees, size: r * 0.55)
    }

    /// A turn: a stem from the bottom to the centre, then the new direction with its head; a
    /// U-turn hooks back down; a cue that is no turn is its word in a box.
    mutating func drawCueArrow(in box: Rect, _ type: CueType, now: Bool) {
        if now { canvas.strokeRect(box) }
        guard let turn = type.turnDeg else {
            canvas.strokeRect(box.insetBy(4))
            canvas.drawText(type.word.count <= 6 ? type.word : String(type.word.prefix(5)), font: .small,
                            in: Rect(x: box.x, y: box.y + box.height / 2 - 6, width: box.width, height: 12), alignment: .center)
            return
        }
        let cx = Double(box.x) + Double(box.width - 1) / 2, cy = Double(box.y) + Double(box.height - 1) / 2 + 2
        let r = Double(min(box.width, box.height)) / 2 - 4
        let bottom = Double(box.maxY) - 3
        if turn == 180 {
            let left = cx - r * 0.45, right = cx + r * 0.45, top = cy - r * 0.6
            thickLine(right, bottom, right, top)
            thickLine(right, top, left, top)
            thickLine(left, top, left, cy + r * 0.4)
            arrowHead(atX: left, y: cy + r * 0.4, degrees: 180, size: r * 0.5)
            return
        }
        thickLine(cx, bottom, cx, cy)
        let d = direction(turn)
        let ex = cx + d.dx * r * 0.9, ey = cy + d.dy * r * 0.9
        thickLine(cx, cy, ex, ey)
        arrowHead(atX: ex, y: ey, degrees: turn, size: r * 0.5)
    }

    // MARK: PROFILE

    /// The course ahead: on a climb, what is left of it; before one, how far to it; the
    /// profile of the next kilometres with the rider's place on it.
    mutating func drawProfile(_ l: NavigationLayout, _ model: ScreenModel) {
        let v = model.navigation
        guard let course = v.course else { return }
        text.clear()
        if let c = v.climb {
            if c.onClimb {
                text.append("CLIMB ")
                text.append(integer: Int64(c.number))
                text.append(UInt8(ascii: "/"))
                text.append(integer: Int64(c.count))
                text.append(UInt8(ascii: " "))
                appendDistance(c.distanceM)
            } else {
                text.append("CLIMB ")
                text.append(integer: Int64(c.number))
                text.append(" IN ")
                appendDistance(c.distanceM)
            }
        } else {
            text.append(course.hasAltitude ? "NO CLIMBS AHEAD" : "NO ALTITUDE")
        }
        canvas.drawText(text, font: .small, x: 0, y: 0)
        text.clear()
        if let c = v.climb {
            text.append(integer: Int64(c.elevationM.rounded()))
            text.append("M ")
            text.append(c.gradePercent, decimals: 1)
            text.append(UInt8(ascii: "%"))
        } else if let a = v.ascentToGoM {
            text.append(integer: Int64(a.rounded()))
            text.append("M TO GO")
        }
        if height >= 64 {
            canvas.drawText(text, font: .small, x: 0, y: 11)
        } else {
            canvas.drawText(text, font: .small, in: Rect(x: 0, y: 0, width: l.chart.width, height: 12), alignment: .right)
        }
        guard course.hasAltitude else { return }
        // What is drawn: from a little behind the rider to the climb's top (at least 1 km), or
        // the next 5 km; the rider at the left.
        let here = v.alongM ?? 0
        var span = 5_000.0
        if let c = v.climb, c.onClimb { span = max(1_000, c.distanceM * 1.15) }
        let behind = span * 0.1
        let start = max(0, here - behind)
        let end = min(course.lengthM, start + span)
        guard end > start else { return }
        let chart = l.chart
        var lo = Double.infinity, hi = -Double.infinity
        let columns = chart.width
        for x in 0..<columns {
            let a = start + (end - start) * Double(x) / Double(max(1, columns - 1))
            if let alt = course.altitude(atAlongM: a) { lo = min(lo, alt); hi = max(hi, alt) }
        }
        guard lo.isFinite else { return }
        let rangeM = max(20, hi - lo)
        for x in 0..<columns {
            let a = start + (end - start) * Double(x) / Double(max(1, columns - 1))
            guard let alt = course.altitude(atAlongM: a) else { continue }
            let h = Int(((alt - lo) / rangeM * Double(chart.height - 2)).rounded()) + 1
            let inClimb = v.climb.map { c in c.onClimb && a >= here && a <= here + c.distanceM } ?? false
            if inClimb || a < here {
                canvas.verticalLine(x: chart.x + x, y: chart.maxY - h, length: h)
            } else {
                canvas.setPixel(x: chart.x + x, y: chart.maxY - h)
                canvas.setPixel(x: chart.x + x, y: chart.maxY - 1)
            }
        }
        // The rider: an inverted marker at their place.
        if v.alongM != nil {
            let x = chart.x + Int((here - start) / (end - start) * Double(columns - 1))
            canvas.invert(Rect(x: max(chart.x, x - 1), y: chart.y, width: 3, height: chart.height))
        }
    }

    // MARK: The map with the course

    /// Around the rider, north up: the course (the part near the rider), the track so far as
    /// dots, the rider as an arrow along the heading (a square while standing), a scale bar.
    mutating func drawCourseMap(in area: Rect, _ model: ScreenModel) {
        let v = model.navigation
        guard let course = v.course else { return }
        guard let lat = v.latDeg, let lon = v.lonDeg else {
            canvas.drawText("NO GPS FIX", font: .small, in: Rect(x: area.x, y: area.y + area.height / 2 - 6, width: area.width, height: 12),
                            alignment: .center)
            return
        }
        let plane = LocalPlane(latDeg: lat, lonDeg: lon)
        // Zoom: the next cue (or 400 m) and a little more fit in the shorter half-side.
        let reach = min(3_000, max(250, (v.cue?.distanceM ?? 400) * 1.3))
        let half = Double(min(area.width, area.height)) / 2 - 3
        var mpp = reach / half
        for step in [2.0, 3, 5, 8, 10, 15, 20, 30, 50] where step >= mpp { mpp = step; break }
        mpp = min(mpp, 50)
        let cx = Double(area.x) + Double(area.width - 1) / 2, cy = Double(area.y) + Double(area.height - 1) / 2
        func px(_ e: Double, _ n: Double) -> (Int, Int) { (Int((cx + e / mpp).rounded()), Int((cy - n / mpp).rounded())) }
        // The course's points within the view's reach along it (all of it before the lock).
        let viewM = Double(max(area.width, area.height)) * mpp
        let from = v.alongM.map { course.segment(atAlongM: $0 - 2 * viewM) } ?? 0
        let to = v.alongM.map { course.segment(atAlongM: $0 + 3 * viewM) + 1 } ?? course.pointCount - 1
        var previous: (Int, Int)?
        for i in from...to {
            let o = plane.offset(latDeg: course.latDeg[i], lonDeg: course.lonDeg[i])
            let inside = abs(o.east) < viewM && abs(o.north) < viewM
            let p = px(o.east, o.north)
            if let q = previous, inside { thickLine(Double(q.0), Double(q.1), Double(p.0), Double(p.1)) }
            previous = inside ? p : nil
        }
        // The track so far, as dots (every kept point).
        if let origin = model.track.originLatDeg, let originLon = model.track.originLonDeg {
            let o = plane.offset(latDeg: origin, lonDeg: originLon)
            for i in 0..<model.track.count {
                let t = model.track.point(i)
                let p = px(o.east + t.eastM, o.north + t.northM)
                if p.0 >= area.x && p.0 < area.maxX && p.1 >= area.y && p.1 < area.maxY { canvas.invertPixel(x: p.0, y: p.1) }
            }
        }
        // The next cue: a small circle.
        if let cue = v.cue, cue.index < course.cues.count {
            let c = course.position(atAlongM: course.cues[cue.index].alongM)
            let o = plane.offset(latDeg: c.latDeg, lonDeg: c.lonDeg)
            let p = px(o.east, o.north)
            canvas.fill(Rect(x: p.0 - 3, y: p.1 - 3, width: 7, height: 7), on: false)
            canvas.strokeRect(Rect(x: p.0 - 3, y: p.1 - 3, width: 7, height: 7))
        }
        // The rider.
        let here = px(0, 0)
        canvas.fill(Rect(x: here.0 - 4, y: here.1 - 4, width: 9, height: 9), on: false)
        if let h = v.headingDeg {
            let d = direction(h)
            let tip = (Double(here.0) + d.dx * 5, Double(here.1) + d.dy * 5)
            thickLine(Double(here.0) - d.dx * 3, Double(here.1) - d.dy * 3, tip.0, tip.1)
            arrowHead(atX: tip.0, y: tip.1, degrees: h, size: 3)
        } else {
            canvas.fill(Rect(x: here.0 - 2, y: here.1 - 2, width: 5, height: 5))
        }
        canvas.fill(Rect(x: area.x, y: area.y, width: 7, height: 17), on: false)
        drawNorthMark(x: area.x, y: area.y)
        drawScaleBar(metresPerPixel: mpp, right: area.maxX - 1, bottom: area.maxY - 1)
    }

    // MARK: The Courses screen

    mutating func drawCourses(_ menu: CoursesMenu, _ model: ScreenModel) {
        let banner = Rect(x: 0, y: 0, width: width, height: 11)
        canvas.fill(banner)
        let loaded = model.navigation.course
        let rowPitch = 12
        let rows = max(1, (height - 12) / rowPitch)
        switch menu.page {
        case .list:
            canvas.drawText("COURSES", font: .small, x: 1, y: -1, on: false)
            text.clear()
            if menu.loading { text.append("...") } else { text.append(integer: Int64(menu.courses.count)) }
            canvas.drawText(text, font: .small, in: Rect(x: 0, y: -1, width: width - 1, height: 12), alignment: .right, on: false)
            let first = max(0, min(menu.cursor - rows + 1, menu.rowCount - rows))
            for r in 0..<rows {
                let i = first + r
                guard i < menu.rowCount else { break }
                let y = 12 + r * rowPitch
                text.clear()
                if i == 0 {
                    text.append(loaded == nil ? "* NO COURSE" : "  NO COURSE")
                } else {
                    let c = menu.courses[i - 1]
                    text.append(loaded?.name == c.name ? "* " : "  ")
                    text.append(c.name)
                    clip(to: (width / Font.small.width) - 7)
                }
                let row = Rect(x: 0, y: y, width: width, height: rowPitch)
                if i == menu.cursor { canvas.fill(row) }
                canvas.drawText(text, font: .small, x: 0, y: y, on: i != menu.cursor)
                if i > 0 {
                    text.clear()
                    text.append(menu.courses[i - 1].lengthM / 1000, decimals: menu.courses[i - 1].lengthM < 100_000 ? 1 : 0)
                    text.append("K")
                    canvas.drawText(text, font: .small, in: Rect(x: 0, y: y, width: width - 1, height: 12), alignment: .right, on: i != menu.cursor)
                }
            }
        case .course:
            text.clear()
            text.append(loaded?.name ?? "NO COURSE")
            clip(to: width / Font.small.width - 1)
            canvas.drawText(text, font: .small, x: 1, y: -1, on: false)
            guard let c = loaded else { break }
            var lines: [(Int, TextBuffer)] = []
            text.clear()
            text.append(c.lengthM / 1000, decimals: 1)
            text.append(" KM")
            if c.hasAltitude {
                text.append("  +")
                text.append(integer: Int64(c.totalAscentM.rounded()))
                text.append(" M")
            }
            lines.append((0, text))
            text.clear()
            text.append(integer: Int64(c.cues.count))
            text.append(" CUES  ")
            text.append(integer: Int64(c.climbs.count))
            text.append(" CLIMBS")
            lines.append((1, text))
            for k in 0..<CoursesMenu.climbRowsShown {
                let i = menu.climbRow + k
                guard i < c.climbs.count else { break }
                let climb = c.climbs[i]
                text.clear()
                text.append(integer: Int64(i + 1))
                text.append(UInt8(ascii: " "))
                text.append(climb.lengthM / 1000, decimals: 1)
                text.append("K ")
                text.append(climb.gradePercent, decimals: 1)
                text.append("% @")
                text.append(climb.startAlongM / 1000, decimals: 1)
                lines.append((2 + k, text))
            }
            for (row, line) in lines where row < rows {
                canvas.drawText(line, font: .small, x: 0, y: 12 + row * rowPitch)
            }
        }
        if let m = menu.message {
            let box = Rect(x: 8, y: height / 2 - 8, width: width - 16, height: 16)
            canvas.fill(Rect(x: box.x - 1, y: box.y - 1, width: box.width + 2, height: box.height + 2), on: false)
            canvas.fill(box)
            canvas.drawText(m, font: .small, in: Rect(x: box.x, y: box.y + 2, width: box.width, height: 12), alignment: .center, on: false)
        }
    }

    // MARK: Cue alerts

    /// A cue over the page: the arrow at the left, the distance (or NOW) and the name.
    mutating func drawCueOverlay(_ type: CueType, stage: CueStage, distanceM: Int, name: String) {
        let box = height >= 64 ? Rect(x: 2, y: 10, width: width - 4, height: 44) : Rect(x: 1, y: 1, width: width - 2, height: 30)
        canvas.fill(Rect(x: box.x - 1, y: box.y - 1, width: box.width + 2, height: box.height + 2), on: false)
        canvas.strokeRect(box)
        let side = box.height - 4
        drawCueArrow(in: Rect(x: box.x + 2, y: box.y + 2, width: side, height: side), type, now: false)
        let x = box.x + side + 6
        text.clear()
        if stage == .now { text.append("NOW") } else { appendDistance(Double(distanceM)) }
        canvas.drawText(text, font: .medium, x: x, y: box.y + 3)
        text.clear()
        text.append(name.isEmpty ? type.word : name)
        clip(to: (box.maxX - x - 2) / Font.small.width)
        canvas.drawText(text, font: .small, x: x, y: box.y + 19)
    }
}
