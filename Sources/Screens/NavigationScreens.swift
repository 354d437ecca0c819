import AppCore
import Display
import Navigation
import RideModel

/// The navigation pages, each described once (a graphic filling the running area): NAV (the
/// next cue, or the way back to the course) and PROFILE (the course ahead, the climb). They follow
/// the data pages while a course is loaded (`NavigationPages.count`).
public enum NavigationPageDesigns {
    public static let nav = PageDesign("NAV", [.graphic(.navigation)])
    public static let profile = PageDesign("PROFILE", [.graphic(.courseProfile)])
    public static let all: [PageDesign] = [nav, profile]
}

/// Where each part of the NAV page goes in its frame, from the frame and the panel's fonts (the
/// one place the page is laid out): the arrow a square at the left as tall as the frame allows
/// (40 px on the 128×64 OLED), the distance, name and the cue after in the column beside it, and
/// the distance and time to go in a row along the bottom when the frame is tall enough.
struct NavigationLayout {
    var arrow: Rect
    var distance: Rect
    var name: Rect
    var then: Rect?
    var bottom: Rect?
    var rule: Rect?
    /// A frame too short for the distance in large digits over the name (above a pairing code's
    /// status line on the 128x32 OLED): the distance (or NOW, or a banner) and the name in the
    /// text font, closed up on their blank rows.
    var short: Bool
    /// Where a banner ("OFF COURSE") goes, and its words' top.
    var banner: Rect
    var bannerTextY: Int

    init(_ frame: Rect, _ g: PanelGeometry) {
        let text = g.fonts.text.height
        let tall = frame.height >= g.px(48)
        let bottomRow = tall ? text + g.px(2) : 0
        let side = min(frame.height - bottomRow - g.px(2), frame.width / 3)
        arrow = Rect(x: frame.x, y: frame.y + g.px(1), width: side, height: side)
        let x = arrow.maxX + g.px(4)
        let w = frame.maxX - x
        let digits = g.fonts.digits(.large).height
        short = frame.height < g.px(1) + digits + g.px(2) + text
        if short {
            distance = Rect(x: x, y: frame.y - g.px(1), width: w, height: text)
            name = Rect(x: x, y: frame.y + text - g.px(3), width: w, height: text)
            banner = Rect(x: x - g.px(1), y: frame.y, width: w + g.px(1), height: name.y + g.px(2) - frame.y)
            bannerTextY = frame.y - g.px(1)
        } else {
            distance = Rect(x: x, y: frame.y + g.px(1), width: w, height: digits)
            name = Rect(x: x, y: distance.maxY + g.px(2), width: w, height: text)
            banner = Rect(x: x - g.px(1), y: distance.y, width: w + g.px(1), height: text + g.px(2))
            bannerTextY = banner.y + g.px(1)
        }
        then = !short && name.maxY + text <= frame.maxY - bottomRow ? Rect(x: x, y: name.maxY, width: w, height: text) : nil
        if tall {
            rule = Rect(x: frame.x, y: frame.maxY - bottomRow, width: frame.width, height: g.px(1))
            bottom = Rect(x: frame.x, y: frame.maxY - text - g.px(1), width: frame.width, height: text)
        }
    }
}

extension ScreenRenderer {
    /// Whether running page `page` is a navigation page (its index among them), given the model:
    /// the last `NavigationPages.count` pages the rider reaches while a course is loaded.
    func navigationPageIndex(_ page: Int, _ model: ScreenModel) -> Int? {
        guard model.navigation.course != nil, layouts.navigationPages.count == NavigationPages.count else { return nil }
        let first = model.runningPageCount - NavigationPages.count
        return page >= first && page < model.runningPageCount ? page - first : nil
    }

    /// What makes the navigation look different: the navigation view and the fix. Returns the
    /// new key length.
    mutating func appendNavigationKey(_ model: ScreenModel, at n: Int) -> Int {
        var h = Hasher()
        h.combine(model.navigation)
        h.combine(model.gps.mode)
        var v = UInt64(bitPattern: Int64(h.finalize()))
        var k = n
        for _ in 0..<8 where k < Self.drawnKeyBytesMax {
            keyScratch[k] = UInt8(truncatingIfNeeded: v)
            v >>= 8
            k += 1
        }
        return k
    }

    // MARK: NAV

    /// The cue (arrow, distance, name, the one after), or the way back to the course, and the
    /// distance and time to go.
    mutating func drawNavigation(in frame: Rect, _ model: ScreenModel) {
        let l = NavigationLayout(frame, geometry)
        let v = model.navigation
        let small = fonts.text
        if let bottom = l.bottom, let rule = l.rule {
            canvas.fill(rule)
            // The distance to go at the left, the time to go at the right, a character apart: in
            // a narrow frame (beside the radar column) "TO GO" gives way, then the time.
            let chars = bottom.width / small.width
            var timeChars = writeTimeToGo(v.secondsToGo) ? text.count : 0
            text.clear()
            appendDistance(v.distanceToGoM)
            let distanceChars = text.count
            let long = "TO GO ".utf8.count + distanceChars + (timeChars > 0 ? 1 + timeChars : 0) <= chars
            if !long && distanceChars + 1 + timeChars > chars { timeChars = 0 }
            if long {
                text.clear()
                text.append("TO GO ")
                appendDistance(v.distanceToGoM)
            }
            canvas.drawText(text, font: small, x: bottom.x, y: bottom.y)
            if timeChars > 0 && writeTimeToGo(v.secondsToGo) { canvas.drawText(text, font: small, in: bottom, alignment: .right) }
        }
        if v.gpsLost || (v.state == .acquiring && v.latDeg == nil) {
            drawBanner(l, v.gpsLost ? "GPS LOST" : "NO GPS FIX")
            drawCourseName(l, v)
            return
        }
        if v.state == .finished {
            drawBanner(l, "COURSE DONE")
            drawCourseName(l, v)
            return
        }
        if v.state == .offCourse || v.state == .wrongWay || v.state == .acquiring {
            drawBanner(l, v.state == .offCourse ? "OFF COURSE" : v.state == .wrongWay ? "WRONG WAY" : "TO COURSE")
            // The way back: relative to the heading when the rider moves, else north up with "N".
            if let b = v.backBearingDeg {
                drawDirectionArrow(in: l.arrow, degrees: v.headingDeg.map { b - $0 } ?? b)
                if v.headingDeg == nil { canvas.drawText("N", font: small, x: l.arrow.x, y: l.arrow.y - geometry.px(2)) }
            }
            text.clear()
            if v.state == .wrongWay { text.append("TURN AROUND") } else { appendDistance(v.backDistanceM) }
            canvas.drawText(text, font: v.state == .wrongWay || l.short ? small : fonts.title, x: l.name.x, y: l.name.y)
            return
        }
        guard let cue = v.cue else {
            drawDirectionArrow(in: l.arrow, degrees: 0)
            canvas.drawText("NO MORE CUES", font: small, x: l.distance.x, y: l.distance.y)
            drawCourseName(l, v)
            return
        }
        drawCueArrow(in: l.arrow, cue.type, now: cue.stage == .now)
        text.clear()
        let font: Font
        if cue.stage == .now {
            text.append("NOW")
            font = l.short ? small : fonts.title
        } else {
            appendDistance(cue.distanceM, digitsOnly: true)
            font = l.short ? small : fonts.digits(.large)
        }
        canvas.drawText(text, font: font, x: l.distance.x, y: l.distance.y)
        if cue.stage != .now {
            let unitX = l.distance.x + font.widthPx(count: text.count) + geometry.px(2)
            text.clear()
            appendDistanceUnit(cue.distanceM)
            canvas.drawText(text, font: small, x: unitX, y: l.distance.maxY - small.height)
        }
        text.clear()
        text.append(cue.name.isEmpty ? cue.type.word : cue.name)
        clip(to: l.name.width / small.width)
        canvas.drawText(text, font: small, x: l.name.x, y: l.name.y)
        if let next = v.followingCue, let then = l.then {
            text.clear()
            text.append("THEN ")
            text.append(next.type.word)
            text.append(UInt8(ascii: " "))
            appendDistance(next.distanceM - cue.distanceM)
            clip(to: then.width / small.width)
            canvas.drawText(text, font: small, x: then.x, y: then.y)
        }
    }

    /// The time to go into `text` ("42 MIN", "2H05"); false (and `text` empty) when unknown.
    mutating func writeTimeToGo(_ seconds: Double?) -> Bool {
        text.clear()
        guard let s = seconds, s.isFinite, s < 360_000 else { return false }
        let minutes = Int64((s / 60).rounded())
        if minutes < 60 {
            text.append(integer: minutes)
            text.append(" MIN")
        } else {
            text.append(integer: minutes / 60)
            text.append(UInt8(ascii: "H"))
            text.append(integer: minutes % 60, minimumDigits: 2)
        }
        return true
    }

    /// A banner across the right column (inverted), e.g. "OFF COURSE".
    mutating func drawBanner(_ l: NavigationLayout, _ words: String) {
        let small = fonts.text
        canvas.fill(l.banner)
        canvas.drawText(words, font: small, in: Rect(x: l.banner.x, y: l.bannerTextY, width: l.banner.width, height: small.height), alignment: .center,
                        on: false)
    }

    /// The course's name under the banner.
    mutating func drawCourseName(_ l: NavigationLayout, _ v: NavigationView) {
        text.clear()
        text.append(v.course?.name ?? "")
        clip(to: l.name.width / fonts.text.width)
        canvas.drawText(text, font: fonts.text, x: l.name.x, y: l.name.y + (l.short ? 0 : geometry.px(2)))
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

    /// A thick line (3 px at 128×64, scaled).
    mutating func thickLine(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double) {
        canvas.line(x0: Int(x0.rounded()), y0: Int(y0.rounded()), x1: Int(x1.rounded()), y1: Int(y1.rounded()), thickness: geometry.px(3))
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
        if now { canvas.strokeRect(box, thickness: geometry.px(1)) }
        guard let turn = type.turnDeg else {
            let small = fonts.text
            canvas.strokeRect(box.insetBy(geometry.px(4)), thickness: geometry.px(1))
            text.clear()
            text.append(type.word)
            clip(to: max(1, (box.width - geometry.px(10)) / small.width))
            canvas.drawText(text, font: small, in: Rect(x: box.x, y: box.y + (box.height - small.height) / 2, width: box.width, height: small.height),
                            alignment: .center)
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

    /// The course ahead in `frame`: on a climb, what is left of it; before one, how far to it;
    /// the profile of the next kilometres with the rider's place on it.
    mutating func drawProfile(in frame: Rect, _ model: ScreenModel) {
        let v = model.navigation
        guard let course = v.course else { return }
        let small = fonts.text
        // Two rows of words over the chart on a tall frame; one (the figures at its right) on a
        // short one.
        let twoRows = frame.height >= geometry.px(48)
        text.clear()
        if let c = v.climb {
            if twoRows || !c.onClimb { text.append("CLIMB ") }
            text.append(integer: Int64(c.number))
            if c.onClimb {
                text.append(UInt8(ascii: "/"))
                text.append(integer: Int64(c.count))
                text.append(UInt8(ascii: " "))
            } else {
                text.append(" IN ")
            }
            appendDistance(c.distanceM)
        } else {
            text.append(course.hasAltitude ? "NO CLIMBS AHEAD" : "NO ALTITUDE")
        }
        canvas.drawText(text, font: small, x: frame.x, y: frame.y)
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
        if twoRows {
            canvas.drawText(text, font: small, x: frame.x, y: frame.y + small.height - geometry.px(1))
        } else {
            canvas.drawText(text, font: small, in: Rect(x: frame.x, y: frame.y, width: frame.width, height: small.height), alignment: .right)
        }
        guard course.hasAltitude else { return }
        let top = frame.y + (twoRows ? 2 * small.height : small.height) + geometry.px(1)
        let chart = Rect(x: frame.x, y: top, width: frame.width, height: frame.maxY - top)
        guard chart.height >= geometry.px(4), chart.width >= 8 else { return }
        // What is drawn: from a little behind the rider to the climb's top (at least 1 km), or
        // the next 5 km; the rider near the left.
        let here = v.alongM ?? 0
        var span = 5_000.0
        if let c = v.climb, c.onClimb { span = max(1_000, c.distanceM * 1.15) }
        let start = max(0, here - span * 0.1)
        let end = min(course.lengthM, start + span)
        guard end > start else { return }
        let columns = chart.width
        func along(_ x: Int) -> Double { start + (end - start) * Double(x) / Double(max(1, columns - 1)) }
        var lo = Double.infinity, hi = -Double.infinity
        for x in 0..<columns {
            if let alt = course.altitude(atAlongM: along(x)) { lo = min(lo, alt); hi = max(hi, alt) }
        }
        guard lo.isFinite else { return }
        let rangeM = max(20, hi - lo)
        for x in 0..<columns {
            let a = along(x)
            guard let alt = course.altitude(atAlongM: a) else { continue }
            let h = Int(((alt - lo) / rangeM * Double(chart.height - 2)).rounded()) + 1
            // Behind the rider and the climb being ridden filled; the rest an outline.
            let filled = a < here || (v.climb.map { c in c.onClimb && a <= here + c.distanceM } ?? false)
            if filled {
                canvas.verticalLine(x: chart.x + x, y: chart.maxY - h, length: h)
            } else {
                canvas.setPixel(x: chart.x + x, y: chart.maxY - h)
                canvas.setPixel(x: chart.x + x, y: chart.maxY - 1)
            }
        }
        if v.alongM != nil {
            let x = chart.x + Int((here - start) / (end - start) * Double(columns - 1))
            let w = geometry.px(3)
            canvas.invert(Rect(x: max(chart.x, x - w / 2), y: chart.y, width: w, height: chart.height))
        }
    }

    // MARK: The map with the course

    /// Around the rider, north up: the course (the part near the rider), the track so far as
    /// dots, the rider as an arrow along the heading (a square while standing), a scale bar.
    mutating func drawCourseMap(in area: Rect, _ model: ScreenModel) {
        let v = model.navigation
        guard let course = v.course else { return }
        guard let lat = v.latDeg, let lon = v.lonDeg else {
            canvas.drawText("NO GPS FIX", font: fonts.text, in: Rect(x: area.x, y: area.y + (area.height - fonts.text.height) / 2,
                                                                     width: area.width, height: fonts.text.height), alignment: .center)
            return
        }
        let plane = LocalPlane(latDeg: lat, lonDeg: lon)
        // Zoom: the next cue (or 400 m) and a little more fit in the shorter half-side.
        let reach = min(3_000, max(250, (v.cue?.distanceM ?? 400) * 1.3))
        let half = Double(min(area.width, area.height)) / 2 - Double(geometry.px(3))
        var mpp = reach / half
        for step in [0.5, 1, 2, 3, 5, 8, 10, 15, 20, 30, 50] where step >= mpp { mpp = step; break }
        mpp = min(mpp, 50)
        let cx = Double(area.x) + Double(area.width - 1) / 2, cy = Double(area.y) + Double(area.height - 1) / 2
        func px(_ e: Double, _ n: Double) -> (Int, Int) { (Int((cx + e / mpp).rounded()), Int((cy - n / mpp).rounded())) }
        // The course's points within the view's reach along it (all of it before the lock).
        let viewM = Double(max(area.width, area.height)) * mpp
        let from = v.alongM.map { course.segment(atAlongM: $0 - 2 * viewM) } ?? 0
        let to = v.alongM.map { course.segment(atAlongM: $0 + 3 * viewM) + 1 } ?? course.pointCount - 1
        // Each segment clipped to the map's area (a thick line's dot reaches `t - 1` right and down
        // of its point): nothing is drawn over the page around the map or past the panel's edge.
        let t = Double(geometry.px(3))
        let box = (minX: Double(area.x), minY: Double(area.y), maxX: Double(area.maxX) - t, maxY: Double(area.maxY) - t)
        var previous: (Double, Double)?
        for i in from...to {
            let o = plane.offset(latDeg: course.latDeg[i], lonDeg: course.lonDeg[i])
            let inside = abs(o.east) < viewM && abs(o.north) < viewM
            let p = (cx + o.east / mpp, cy - o.north / mpp)
            if let q = previous, inside,
               let c = Self.clipSegment(q.0, q.1, p.0, p.1, minX: box.minX, minY: box.minY, maxX: box.maxX, maxY: box.maxY) {
                thickLine(c.x0, c.y0, c.x1, c.y1)
            }
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
        // The next cue: a small circle (when it is on the map).
        if let cue = v.cue, cue.index < course.cues.count {
            let c = course.position(atAlongM: course.cues[cue.index].alongM)
            let o = plane.offset(latDeg: c.latDeg, lonDeg: c.lonDeg)
            let p = px(o.east, o.north)
            let r = geometry.px(3)
            if p.0 - r >= area.x && p.0 + r < area.maxX && p.1 - r >= area.y && p.1 + r < area.maxY {
            canvas.fill(Rect(x: p.0 - r, y: p.1 - r, width: 2 * r + 1, height: 2 * r + 1), on: false)
            canvas.strokeRect(Rect(x: p.0 - r, y: p.1 - r, width: 2 * r + 1, height: 2 * r + 1), thickness: geometry.px(1))
            }
        }
        // The rider.
        let here = px(0, 0)
        let k = Double(geometry.px(1))
        canvas.fill(Rect(x: here.0 - geometry.px(6), y: here.1 - geometry.px(6), width: geometry.px(13), height: geometry.px(13)), on: false)
        if let h = v.headingDeg {
            // A filled arrowhead along the heading.
            let d = direction(h)
            let tip = (Double(here.0) + d.dx * 6 * k, Double(here.1) + d.dy * 6 * k)
            let baseX = Double(here.0) - d.dx * 4 * k, baseY = Double(here.1) - d.dy * 4 * k
            let side = (-d.dy * 4 * k, d.dx * 4 * k)
            let steps = Int(8 * k)
            for i in 0...steps {
                let t = Double(i) / Double(steps) * 2 - 1
                canvas.line(x0: Int(tip.0.rounded()), y0: Int(tip.1.rounded()),
                            x1: Int((baseX + side.0 * t).rounded()), y1: Int((baseY + side.1 * t).rounded()))
            }
        } else {
            canvas.fill(Rect(x: here.0 - geometry.px(3), y: here.1 - geometry.px(3), width: geometry.px(7), height: geometry.px(7)))
        }
        canvas.fill(Rect(x: area.x, y: area.y, width: geometry.px(7), height: geometry.px(17)), on: false)
        drawNorthMark(x: area.x, y: area.y)
        drawScaleBar(metresPerPixel: mpp, right: area.maxX - 1, bottom: area.maxY - 1)
    }

    /// Cohen–Sutherland: the part of the segment (x0, y0)–(x1, y1) inside the box
    /// [minX, maxX] × [minY, maxY], or nil when none of it is. No allocation; each pass moves one
    /// end onto an edge of the box, so at most four passes per end.
    static func clipSegment(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double,
                            minX: Double, minY: Double, maxX: Double, maxY: Double) -> (x0: Double, y0: Double, x1: Double, y1: Double)? {
        precondition(minX <= maxX && minY <= maxY, "an empty clip box")
        func code(_ x: Double, _ y: Double) -> UInt8 {
            (x < minX ? 1 : 0) | (x > maxX ? 2 : 0) | (y < minY ? 4 : 0) | (y > maxY ? 8 : 0)
        }
        var ax = x0, ay = y0, bx = x1, by = y1
        var ca = code(ax, ay), cb = code(bx, by)
        for _ in 0..<8 {
            if ca | cb == 0 { return (ax, ay, bx, by) }
            if ca & cb != 0 { return nil }
            // Move the end that lies outside onto the edge it is beyond.
            let out = ca != 0 ? ca : cb
            let x: Double, y: Double
            if out & 8 != 0 { x = ax + (bx - ax) * (maxY - ay) / (by - ay); y = maxY }
            else if out & 4 != 0 { x = ax + (bx - ax) * (minY - ay) / (by - ay); y = minY }
            else if out & 2 != 0 { y = ay + (by - ay) * (maxX - ax) / (bx - ax); x = maxX }
            else { y = ay + (by - ay) * (minX - ax) / (bx - ax); x = minX }
            if out == ca { ax = x; ay = y; ca = code(ax, ay) } else { bx = x; by = y; cb = code(bx, by) }
        }
        // Rounding may leave an end a hair outside after eight passes: the segment grazes a corner.
        return ca | cb == 0 ? (ax, ay, bx, by) : nil
    }

    // MARK: The Courses screen

    /// LAP on idle: the courses on the card (the loaded one marked), or the loaded course's page
    /// (length, ascent, cues and its climbs before the ride).
    mutating func drawCourses(_ menu: CoursesMenu, _ model: ScreenModel) {
        let small = fonts.text
        let banner = Rect(x: 0, y: 0, width: width, height: small.height - geometry.px(1))
        // Above a pairing code's status line on a short panel (`height`), the rows close up on
        // their blank rows, as the summary's.
        let tight = height - banner.maxY - geometry.px(1) < small.height
        let pitch = tight ? small.height - geometry.px(2) : small.height
        let rowsY = tight ? banner.maxY - geometry.px(1) : banner.maxY + geometry.px(1)
        canvas.fill(banner)
        let loaded = model.navigation.course
        let rows = max(1, (height - rowsY) / pitch)
        let chars = width / small.width
        switch menu.page {
        case .list:
            canvas.drawText("COURSES", font: small, x: geometry.px(1), y: -geometry.px(1), on: false)
            text.clear()
            if menu.loading { text.append("...") } else { text.append(integer: Int64(menu.courses.count)) }
            canvas.drawText(text, font: small, in: Rect(x: 0, y: -geometry.px(1), width: width - geometry.px(1), height: small.height),
                            alignment: .right, on: false)
            let first = max(0, min(menu.cursor - rows + 1, menu.rowCount - rows))
            for r in 0..<rows {
                let i = first + r
                guard i < menu.rowCount else { break }
                let y = rowsY + r * pitch
                // Closed up, the one row shown is the selected one, not inverted.
                let selected = i == menu.cursor && !(tight && rows == 1)
                if selected { canvas.fill(Rect(x: 0, y: y, width: width, height: pitch)) }
                text.clear()
                if i == 0 {
                    text.append(loaded == nil ? "* NO COURSE" : "  NO COURSE")
                } else {
                    let c = menu.courses[i - 1]
                    text.append(loaded?.name == c.name ? "* " : "  ")
                    text.append(c.name)
                    clip(to: chars - 7)
                }
                canvas.drawText(text, font: small, x: 0, y: y, on: !selected)
                if i > 0 {
                    let c = menu.courses[i - 1]
                    text.clear()
                    text.append(c.lengthM / 1000, decimals: c.lengthM < 100_000 ? 1 : 0)
                    text.append("K")
                    canvas.drawText(text, font: small, in: Rect(x: 0, y: y, width: width - geometry.px(1), height: pitch),
                                    alignment: .right, on: !selected)
                }
            }
        case .course:
            text.clear()
            text.append(loaded?.name ?? "NO COURSE")
            clip(to: chars - 1)
            canvas.drawText(text, font: small, x: geometry.px(1), y: -geometry.px(1), on: false)
            guard let c = loaded else { break }
            var row = 0
            func line() {
                if row < rows { canvas.drawText(text, font: small, x: 0, y: rowsY + row * pitch) }
                row += 1
            }
            text.clear()
            text.append(c.lengthM / 1000, decimals: 1)
            text.append(" KM")
            if c.hasAltitude {
                text.append("  +")
                text.append(integer: Int64(c.totalAscentM.rounded()))
                text.append(" M")
            }
            line()
            text.clear()
            text.append(integer: Int64(c.cues.count))
            text.append(" CUES  ")
            text.append(integer: Int64(c.climbs.count))
            text.append(" CLIMBS")
            line()
            let shown = max(CoursesMenu.climbRowsShown, rows - 2)
            for k in 0..<shown {
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
                line()
            }
        }
        if let m = menu.message {
            let m8 = geometry.px(8)
            let box = Rect(x: m8, y: height / 2 - m8, width: width - 2 * m8, height: small.height + geometry.px(4))
            canvas.fill(Rect(x: box.x - 1, y: box.y - 1, width: box.width + 2, height: box.height + 2), on: false)
            canvas.fill(box)
            canvas.drawText(m, font: small, in: Rect(x: box.x, y: box.y + geometry.px(2), width: box.width, height: small.height),
                            alignment: .center, on: false)
        }
    }

    // MARK: Cue alerts

    /// A cue over the page: the arrow at the left, the distance (or NOW) and the name.
    mutating func drawCueOverlay(_ type: CueType, stage: CueStage, distanceM: Int, name: String) {
        let small = fonts.text, title = fonts.title
        let m = geometry.px(2)
        let box = tall ? Rect(x: m, y: geometry.px(10), width: width - 2 * m, height: height - geometry.px(20))
                       : Rect(x: geometry.px(1), y: geometry.px(1), width: width - geometry.px(2), height: height - geometry.px(2))
        canvas.fill(Rect(x: box.x - 1, y: box.y - 1, width: box.width + 2, height: box.height + 2), on: false)
        canvas.strokeRect(box, thickness: geometry.px(1))
        // The arrow a square as tall as the box, at most half its width (a square panel leaves
        // the words the other half); the words beside its top, each line fitted to what is left.
        let side = min(box.height - 2 * m, box.width / 2)
        let top = box.y + (box.height - side) / 2
        drawCueArrow(in: Rect(x: box.x + m, y: top, width: side, height: side), type, now: false)
        let x = box.x + side + 3 * m
        let room = box.maxX - x - m
        text.clear()
        if stage == .now { text.append("NOW") } else { appendDistance(Double(distanceM)) }
        // Above a pairing code's status line on a short panel (`height`): two lines of the text
        // font from the box's top, closed up on their blank rows.
        let titleFits = title.widthPx(count: text.count) <= room && top + title.height + small.height <= box.maxY
        let first: Font = titleFits ? title : small
        let tight = !titleFits && top + 2 * small.height > box.maxY
        let y0 = tight ? box.y - geometry.px(1) : top
        clip(to: room / first.width)
        canvas.drawText(text, font: first, x: x, y: y0)
        text.clear()
        text.append(name.isEmpty ? type.word : name)
        clip(to: room / small.width)
        canvas.drawText(text, font: small, x: x, y: y0 + first.height - (tight ? geometry.px(2) : 0))
    }
}
