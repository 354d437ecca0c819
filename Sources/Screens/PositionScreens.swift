import AppCore
import Display
import Positioning
import RideModel

/// The climbing and "where am I" pages (docs/gps.md, docs/screens.md).
public enum PositionPages {
    /// Timer, altitude, total ascent, grade.
    public static let climb128x64 = PageLayout(name: "CLIMB", fields: [
        Field(.timer, Rect(x: 0, y: 0, width: 122, height: 16), size: .large, label: .left),
        Field(.metric(.altitude), Rect(x: 0, y: 18, width: 122, height: 22), size: .large, label: .left),
        Field(.metric(.ascent), Rect(x: 0, y: 42, width: 61, height: 22), size: .large, label: .top),
        Field(.metric(.grade), Rect(x: 64, y: 42, width: 58, height: 22), size: .large, label: .top),
    ], rules: [Rect(x: 0, y: 17, width: 122, height: 1), Rect(x: 0, y: 41, width: 122, height: 1),
               Rect(x: 62, y: 42, width: 1, height: 22)])

    /// The track so far across the whole panel (the page dots keep the right edge).
    public static let map128x64 = PageLayout(name: "MAP", fields: [], map: Rect(x: 0, y: 0, width: 122, height: 64))

    public static let climb128x32 = PageLayout(name: "CLIMB", fields: [
        Field(.metric(.altitude), Rect(x: 0, y: 0, width: 122, height: 15), size: .large, label: .left),
        Field(.metric(.ascent), Rect(x: 0, y: 17, width: 61, height: 15), size: .large, label: .left),
        Field(.metric(.grade), Rect(x: 64, y: 17, width: 58, height: 15), size: .medium, label: .left),
    ], rules: [Rect(x: 0, y: 16, width: 122, height: 1)])

    public static let map128x32 = PageLayout(name: "MAP", fields: [], map: Rect(x: 0, y: 0, width: 122, height: 32))
}

/// Scale bar lengths offered, m (one is picked so that the bar is 16–40 px long).
let scaleBarLengthsM: [Double] = [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000]

extension ScreenRenderer {
    /// Sensor boxes are 24 px wide; five expected sources (with the GPS) sit 25 px apart.
    func boxStep(_ model: ScreenModel) -> Int { expectedSensorCount(model) >= 5 ? 25 : 26 }

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
        guard let b = t.bounds, let current = t.current else {
            canvas.drawText("NO GPS TRACK", font: .small, in: Rect(x: area.x, y: area.y + area.height / 2 - 8, width: area.width, height: 12),
                            alignment: .center)
            writeGpsBox(model.gps)
            canvas.drawText(text, font: .small, in: Rect(x: area.x, y: area.y + area.height / 2 + 4, width: area.width, height: 12),
                            alignment: .center)
            return
        }
        let margin = 4
        let inner = Rect(x: area.x + margin, y: area.y + margin, width: area.width - 2 * margin, height: area.height - 2 * margin - 4)
        let spanE = b.maxEastM - b.minEastM, spanN = b.maxNorthM - b.minNorthM
        // Metres per pixel: the whole track fits; at least 1 m/px so a start does not zoom in on noise.
        let mpp = max(1.0, spanE / Double(max(1, inner.width - 1)), spanN / Double(max(1, inner.height - 1)))
        let midE = (b.minEastM + b.maxEastM) / 2, midN = (b.minNorthM + b.maxNorthM) / 2
        let cx = Double(inner.x) + Double(inner.width - 1) / 2, cy = Double(inner.y) + Double(inner.height - 1) / 2
        func px(_ e: Double, _ n: Double) -> (Int, Int) {
            (Int(((e - midE) / mpp + cx).rounded()), Int((cy - (n - midN) / mpp).rounded()))
        }
        var previous: (Int, Int)?
        for i in 0..<t.count {
            let p = t.point(i)
            let q = px(p.eastM, p.northM)
            if let prev = previous, !p.startsPiece { canvas.line(x0: prev.0, y0: prev.1, x1: q.0, y1: q.1) }
            previous = q
        }
        let here = px(current.eastM, current.northM)
        if let prev = previous { canvas.line(x0: prev.0, y0: prev.1, x1: here.0, y1: here.1) }
        if t.count > 0 {
            let s = px(t.point(0).eastM, t.point(0).northM)
            canvas.fill(Rect(x: s.0 - 2, y: s.1 - 2, width: 5, height: 5), on: false)
            canvas.strokeRect(Rect(x: s.0 - 2, y: s.1 - 2, width: 5, height: 5))
        }
        canvas.fill(Rect(x: here.0 - 2, y: here.1 - 2, width: 5, height: 5))
        drawNorthMark(x: area.maxX - 7, y: area.y)
        drawScaleBar(metresPerPixel: mpp, x: area.x, bottom: area.maxY - 1)
    }

    /// A small "N" over an upward arrow in the top right corner.
    mutating func drawNorthMark(x: Int, y: Int) {
        canvas.drawText("N", font: .small, x: x, y: y - 2)
        canvas.verticalLine(x: x + 2, y: y + 9, length: 6)
        canvas.line(x0: x, y0: y + 11, x1: x + 2, y1: y + 9)
        canvas.line(x0: x + 4, y0: y + 11, x1: x + 2, y1: y + 9)
    }

    /// A bar of a round length (16–40 px) with end ticks and its length ("500m", "2km").
    mutating func drawScaleBar(metresPerPixel mpp: Double, x: Int, bottom: Int) {
        var length = scaleBarLengthsM[0]
        for l in scaleBarLengthsM where l / mpp <= 40 { length = l }
        let px = max(2, Int((length / mpp).rounded()))
        canvas.horizontalLine(x: x, y: bottom, length: px)
        canvas.verticalLine(x: x, y: bottom - 3, length: 3)
        canvas.verticalLine(x: x + px - 1, y: bottom - 3, length: 3)
        text.clear()
        if length >= 1000 {
            text.append(integer: Int64(length / 1000))
            text.append("km")
        } else {
            text.append(integer: Int64(length))
            text.append(UInt8(ascii: "m"))
        }
        canvas.drawText(text, font: .small, x: x + px + 2, y: bottom - 10)
    }
}
