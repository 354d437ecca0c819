import AppCore
import Display
import Positioning
import RideModel

/// The climbing and "where am I" pages (docs/gps.md, docs/screens.md).
public enum PositionPages {
    /// Timer, altitude, total ascent, grade: a row each (altitude over ascent and grade on a
    /// compact panel). Clear of the page dots by 4 px.
    public static let climb = PageDesign("CLIMB", trailingInset: 4, [
        .fill([.init(.timer, .large, label: .left)], in: .from(.regular)),
        .fill([.init(.metric(.altitude), .large, label: .left)]),
        .fill([.init(.metric(.ascent), .large, label: .left), .init(.metric(.grade), .medium, label: .left, in: .compact)]),
        .fill([.init(.metric(.grade), .large, label: .left)], in: .from(.regular)),
        // A large panel adds what a climb is ridden by.
        .fill([.init(.metric(.speed), .large), .init(.metric(.heartRate), .large), .init(.metric(.power), .large)], in: .large),
    ])

    /// The track so far across the whole panel, clear of the page dots; on a large panel a row
    /// of speed, distance and the timer under it.
    public static let map = PageDesign("MAP", trailingInset: 4, [
        .graphic(.track),
        .fit(pad: 1, [.init(.metric(.speed), .medium, label: .left), .init(.metric(.distance), .medium, label: .left),
                      .init(.timer, .medium, label: .left)], in: .large),
    ])
}

/// Scale bar lengths offered, m (one is picked so that the bar is 16–40 px long).
let scaleBarLengthsM: [Double] = [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000]

extension ScreenRenderer {
    /// Sensor boxes are four characters wide (24 px on the OLEDs), 2 px apart, 1 px with five
    /// expected sources (the GPS among them).
    func boxStep(_ model: ScreenModel) -> Int { sensorBox.width + geometry.px(expectedSensorCount(model) >= 5 ? 1 : 2) }

    /// The GPS box: the fix and the satellites in use ("3D 9", "2D12"), "GPS" without a fix.
    mutating func writeGpsBox(_ g: GpsStatus) {
        text.clear()
        guard g.mode.hasFix else { text.append("GPS"); return }
        text.append(g.mode == .fix3D ? "3D" : "2D")
        if let used = g.satellitesUsed {
            let u = max(0, min(99, used))
            if u < 10 { text.append(UInt8(ascii: " ")) }
            text.append(integer: Int64(u))
        }
    }

    /// Under the GPS box on the idle screen: satellites used / seen ("9/12"), or the state.
    mutating func writeSatellites(_ g: GpsStatus) {
        text.clear()
        switch g.mode {
        case .absent: text.append("--")
        case .noFix, .fix2D, .fix3D:
            text.append(integer: Int64(max(0, min(99, g.satellitesUsed ?? 0))))
            text.append(UInt8(ascii: "/"))
            text.append(integer: Int64(max(0, min(99, g.satellitesVisible ?? 0))))
        }
    }

    /// What makes the map page look different: the track (its hash covers the points count, the
    /// last kept point and the current position) and the fix mode. Returns the new key length.
    mutating func appendMapKey(_ model: ScreenModel, at n: Int) -> Int {
        var h = Hasher()
        h.combine(model.track)
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

    /// The track so far in `area`, north up, the whole of it fitted in, with a scale bar, a north
    /// mark, the start (an open square) and where the rider is (a filled square); "--" while
    /// there is no position yet. Pieces of track separated by a lost fix are not joined.
    mutating func drawMap(in area: Rect, _ model: ScreenModel) {
        let t = model.track
        let small = fonts.text, g = geometry
        guard let b = t.bounds, let current = t.current else {
            // Two lines about the middle, closed up on their blank rows in a short area (above a
            // pairing code's status line on the 128x32 OLED).
            let second = min(area.y + area.height / 2 + g.px(4), area.maxY - small.height + g.px(1))
            let first = min(area.y + area.height / 2 - small.height + g.px(4), second - small.height + g.px(2))
            canvas.drawText("NO GPS TRACK", font: small, in: Rect(x: area.x, y: first, width: area.width, height: small.height),
                            alignment: .center)
            // "NO FIX 2/7 SAT", "3D 9/12 SAT", "-- " without gpsd.
            text.clear()
            text.append(model.gps.mode.description)
            if model.gps.mode != .absent {
                text.append(UInt8(ascii: " "))
                text.append(integer: Int64(max(0, min(99, model.gps.satellitesUsed ?? 0))))
                text.append(UInt8(ascii: "/"))
                text.append(integer: Int64(max(0, min(99, model.gps.satellitesVisible ?? 0))))
                text.append(" SAT")
            }
            canvas.drawText(text, font: small, in: Rect(x: area.x, y: second, width: area.width, height: small.height),
                            alignment: .center)
            return
        }
        // The track keeps clear of the north mark (top left) and, on a tall panel, of the scale
        // bar's row (bottom).
        let margin = g.px(3)
        let scaleRowPx = area.height >= g.px(48) ? small.height - g.px(2) : 0
        let inner = Rect(x: area.x + margin, y: area.y + margin, width: area.width - 2 * margin,
                         height: area.height - 2 * margin - scaleRowPx)
        let spanE = b.maxEastM - b.minEastM, spanN = b.maxNorthM - b.minNorthM
        // Metres per pixel: the whole track fits; at least 1 m/px so a start does not zoom in on noise.
        let mpp = max(1.0, spanE / Double(max(1, inner.width - 1)), spanN / Double(max(1, inner.height - 1)))
        let midE = (b.minEastM + b.maxEastM) / 2, midN = (b.minNorthM + b.maxNorthM) / 2
        let cx = Double(inner.x) + Double(inner.width - 1) / 2, cy = Double(inner.y) + Double(inner.height - 1) / 2
        func px(_ e: Double, _ n: Double) -> (Int, Int) {
            (Int(((e - midE) / mpp + cx).rounded()), Int((cy - (n - midN) / mpp).rounded()))
        }
        let stroke = g.px(1)
        var previous: (Int, Int)?
        for i in 0..<t.count {
            let p = t.point(i)
            let q = px(p.eastM, p.northM)
            if let prev = previous, !p.startsPiece { canvas.line(x0: prev.0, y0: prev.1, x1: q.0, y1: q.1, thickness: stroke) }
            previous = q
        }
        let here = px(current.eastM, current.northM)
        if let prev = previous { canvas.line(x0: prev.0, y0: prev.1, x1: here.0, y1: here.1, thickness: stroke) }
        let mark = g.px(5), half = g.px(2)
        if t.count > 0 {
            let s = px(t.point(0).eastM, t.point(0).northM)
            canvas.fill(Rect(x: s.0 - half, y: s.1 - half, width: mark, height: mark), on: false)
            canvas.strokeRect(Rect(x: s.0 - half, y: s.1 - half, width: mark, height: mark), thickness: stroke)
        }
        canvas.fill(Rect(x: here.0 - half, y: here.1 - half, width: mark, height: mark))
        drawNorthMark(x: area.x, y: area.y)
        drawScaleBar(metresPerPixel: mpp, right: area.maxX - 1, bottom: area.maxY - 1)
    }

    /// A small "N" over an upward arrow in the top left corner.
    mutating func drawNorthMark(x: Int, y: Int) {
        let g = geometry, t = g.px(1)
        // The letter's top ink row (the font's cap top) on the area's first row.
        canvas.drawText("N", font: fonts.text, x: x, y: y - fonts.labelCapTop)
        let top = y + fonts.labelCapRows
        canvas.verticalLine(x: x + g.px(2), y: top, length: g.px(6), thickness: t)
        canvas.line(x0: x, y0: top + g.px(2), x1: x + g.px(2), y1: top, thickness: t)
        canvas.line(x0: x + g.px(4), y0: top + g.px(2), x1: x + g.px(2), y1: top, thickness: t)
    }

    /// A bar of a round length (up to 40 px on the OLEDs) with end ticks, ending at `right`, its
    /// length ("500m", "2km") to its left.
    mutating func drawScaleBar(metresPerPixel mpp: Double, right: Int, bottom: Int) {
        let g = geometry, t = g.px(1), tick = g.px(3)
        var length = scaleBarLengthsM[0]
        for l in scaleBarLengthsM where l / mpp <= Double(g.px(40)) { length = l }
        let px = max(2, Int((length / mpp).rounded()))
        let x = right - px + 1
        canvas.horizontalLine(x: x, y: bottom - t + 1, length: px, thickness: t)
        canvas.verticalLine(x: x, y: bottom - tick, length: tick, thickness: t)
        canvas.verticalLine(x: right - t + 1, y: bottom - tick, length: tick, thickness: t)
        text.clear()
        if length >= 1000 {
            text.append(integer: Int64(length / 1000))
            text.append("km")
        } else {
            text.append(integer: Int64(length))
            text.append(UInt8(ascii: "m"))
        }
        let small = fonts.text
        canvas.drawText(text, font: small, x: x - g.px(2) - small.widthPx(count: text.count), y: bottom - small.height + g.px(2))
    }
}

extension ScreenCatalogue {
    /// A ride of 12 km so far, heading north-east over rolling country with a hairpin climb, the
    /// fix lost for 40 s near the end (the track is not joined across the gap).
    public static func track() -> Breadcrumb {
        var b = Breadcrumb()
        let degPerM = 1 / 111_200.0, lonPerM = degPerM / 0.682
        var north = 0.0, east = 0.0
        for k in 0..<1_500 {
            var heading = 0.2 + 0.9 * Double(k) / 1_500 + 0.35 * cosine(Double(k) / 90)
            if k > 600 && k < 680 { heading += Double.pi * Double(k - 600) / 40 } // the hairpins
            north += 8 * cosine(heading)
            east += 8 * cosine(heading - Double.pi / 2)
            if k >= 1_150 && k < 1_190 { continue } // the fix lost for 40 s
            b.add(latDeg: 47.05 + north * degPerM, lonDeg: 8.31 + east * lonPerM, atMs: Int64(k) * 1_000)
        }
        return b
    }

    /// cos by its series, for the catalogue's made-up track (no math library in Screens).
    static func cosine(_ x: Double) -> Double {
        var y = x.truncatingRemainder(dividingBy: 2 * Double.pi)
        if y > Double.pi { y -= 2 * Double.pi } else if y < -Double.pi { y += 2 * Double.pi }
        var term = 1.0, sum = 1.0
        for k in 1..<16 { term *= -y * y / Double((2 * k - 1) * (2 * k)); sum += term }
        return sum
    }

    /// The climbing and map pages, the GPS in the status row, the GPS alert.
    static func positionEntries(ride: ScreenModel, idle: ScreenModel) -> [Entry] {
        var out: [Entry] = []
        func add(_ name: String, _ caption: String, height: Int = 64, _ model: ScreenModel) {
            out.append(Entry(name: name, caption: caption, height: height, model: model))
        }
        var r = ride
        r.runningPageCount = 5
        r.sensors[Int(SensorRole.gps.rawValue)] = .connected
        r.gps = GpsStatus(mode: .fix3D, satellitesUsed: 9, satellitesVisible: 12)
        r[.altitude] = 436
        r[.ascent] = 612
        r[.grade] = 6.4
        r.track = track()
        r.mode = .running(page: 3)
        add("running-climb", "Running, climbing page: altitude (barometric, calibrated from GPS), total ascent, grade over the last 50 m", r)
        r.mode = .running(page: 4)
        add("running-map", "Running, \"where am I\": the track so far, north up, with a scale; the start (open square) and the rider (filled)", r)
        var noFix = r
        noFix.track = Breadcrumb()
        noFix.gps = GpsStatus(mode: .noFix, satellitesUsed: 2, satellitesVisible: 7)
        noFix.sensors[Int(SensorRole.gps.rawValue)] = .searching
        noFix[.altitude] = nil
        noFix[.grade] = nil
        add("running-map-no-fix", "The map page before the first fix", noFix)
        noFix.mode = .running(page: 3)
        add("running-climb-no-data", "The climbing page without altitude (no barometer, no 3D fix yet)", noFix)

        var withGps = idle
        withGps.sensors[Int(SensorRole.cadence.rawValue)] = .connected
        withGps.sensors[Int(SensorRole.gps.rawValue)] = .connected
        withGps.gps = GpsStatus(mode: .fix3D, satellitesUsed: 9, satellitesVisible: 12)
        add("idle-gps", "Idle with GPS: the fix (3D) and satellites in use in its box, used/seen under it", withGps)
        var searching = withGps
        searching.sensors[Int(SensorRole.gps.rawValue)] = .searching
        searching.gps = GpsStatus(mode: .noFix, satellitesUsed: 3, satellitesVisible: 8)
        add("idle-gps-searching", "Idle, the GPS searching: NO FIX yet, 3 of 8 satellites used", searching)
        var countdown = withGps
        countdown.mode = .countdown(2)
        countdown.gps = GpsStatus(mode: .fix2D, satellitesUsed: 4, satellitesVisible: 9)
        add("countdown-gps", "Countdown with GPS: a 2D fix on 4 satellites in the sensor row", countdown)
        var lost = r
        lost.mode = .running(page: 0)
        lost.overlay = .sensorLost(.gps)
        lost.sensors[Int(SensorRole.gps.rawValue)] = .lost
        add("alert-gps-lost", "Alert overlay: the GPS fix lost (like a lost sensor)", lost)

        return out
    }
}
