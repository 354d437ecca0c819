import AppCore
import Display
import RideModel

/// The rear radar's column, at the left edge of every running page while a radar is paired
/// (`ScreenModel.radarShown`); the page is laid out beside it (`ScreenLayouts.radarRunningPages`).
///
/// Connected: the nearest vehicle's distance in metres on top (white on black when it closes
/// fast), below it the road behind the rider up to the radar's reach (`RadarPicture.reachM`),
/// the rider a bar at the bottom, each vehicle a box at its range: an outline when approaching, a
/// filled box the column's width when approaching fast. A clear road is the road with nothing on it.
///
/// Not connected: the column is lit, "RDR" on top and the state under it (WAIT, OLD, LOST); on a
/// panel too short for the word, crossed when lost, struck once when stale, lit alone while
/// waiting: never the empty road of a clear one.
public enum RadarColumn {
    /// The column's frame on a panel: three characters of the text font wide, the full height;
    /// on a compact panel a narrow strip without the distance (the page needs the width).
    public static func frame(_ g: PanelGeometry) -> Rect {
        Rect(x: 0, y: 0, width: g.sizeClass == .compact ? g.px(7) : g.fonts.text.widthPx(count: 3), height: g.height)
    }

    /// Whether the column has room for the distance and the words.
    static func hasText(_ c: Rect, _ g: PanelGeometry) -> Bool { c.width >= g.fonts.text.widthPx(count: 3) }

    /// Where the running page goes beside it: from two pixels right of its rule.
    public static func pageArea(_ g: PanelGeometry) -> Rect {
        let c = frame(g), area = g.runningArea
        let x = c.maxX + g.px(2)
        return Rect(x: x, y: area.y, width: area.maxX - x, height: area.height)
    }

    /// The word for a radar that is not connected.
    static func stateWord(_ s: SensorState) -> StaticString {
        switch s {
        case .searching: "WAIT"
        case .stale: "OLD"
        case .lost: "LOST"
        case .notConfigured, .connected: ""
        }
    }
}

extension ScreenRenderer {
    /// The column for the moment: above the pairing code's status line when there is one (the
    /// code never covers the road or the rider).
    func radarColumn(_ model: ScreenModel) -> Rect {
        var c = layouts.radarColumn
        if let line = pairingCodeFrame(model) { c.height = min(c.height, line.y - c.y) }
        return c
    }

    /// The road part of the column (below the distance): top and bottom rows.
    private func radarRoad(_ c: Rect) -> (top: Int, bottom: Int) {
        (c.y + (RadarColumn.hasText(c, geometry) ? fonts.text.height + geometry.px(1) : 0), c.maxY - 1)
    }

    /// The row a vehicle at `rangeM` is drawn at (its box's top).
    private func radarRow(_ rangeM: Double, _ c: Rect) -> Int {
        let (top, bottom) = radarRoad(c)
        let rider = geometry.px(3), box = geometry.px(4)
        let span = max(1, bottom - rider - box - top)
        let f = min(1, max(0, rangeM / RadarPicture.reachM))
        return bottom - rider - box - Int((f * Double(span)).rounded())
    }

    mutating func drawRadarColumn(_ c: Rect, _ model: ScreenModel) {
        let g = geometry, small = fonts.text
        canvas.verticalLine(x: c.maxX, y: c.y, length: c.height, thickness: g.px(1))
        let state = model.sensor(.radar)
        let hasText = RadarColumn.hasText(c, g)
        guard state == .connected else {
            canvas.fill(c)
            if hasText {
                canvas.drawText("RDR", font: small, in: Rect(x: c.x, y: c.y, width: c.width, height: small.height), alignment: .center, on: false)
            }
            let word = RadarColumn.stateWord(state)
            let letters = word.utf8CodeUnitCount
            if hasText && c.height - small.height >= letters * small.height {
                // The word down the column, a letter a row.
                word.withUTF8Buffer { w in
                    for i in 0..<letters {
                        text.clear()
                        text.append(w[i])
                        canvas.drawText(text, font: small, in: Rect(x: c.x, y: c.y + (i + 1) * small.height, width: c.width, height: small.height),
                                        alignment: .center, on: false)
                    }
                }
            } else if state != .searching {
                // Too short for the word: lost is crossed, stale struck once; waiting is the lit
                // column alone (each differs from the others and from a road).
                let top = c.y + (hasText ? small.height + g.px(1) : g.px(1))
                canvas.line(x0: c.x + g.px(1), y0: top, x1: c.maxX - g.px(2), y1: c.maxY - 1, on: false, thickness: g.px(1))
                if state == .lost {
                    canvas.line(x0: c.maxX - g.px(2), y0: top, x1: c.x + g.px(1), y1: c.maxY - 1, on: false, thickness: g.px(1))
                }
            }
            return
        }
        let p = model.radar
        let (top, bottom) = radarRoad(c)
        let mid = c.x + c.width / 2
        // The road: a dotted line down the middle; the rider a bar at the bottom.
        var y = top
        while y < bottom - g.px(3) {
            canvas.fill(Rect(x: mid - g.px(1) / 2, y: y, width: g.px(1), height: g.px(1)))
            y += g.px(3)
        }
        // The rider: a wedge pointing up the road.
        for k in 0..<g.px(3) {
            canvas.horizontalLine(x: mid - k, y: bottom - g.px(3) + 1 + k, length: 2 * k + 1)
        }
        if hasText, let nearest = p.nearest {
            text.clear()
            text.append(integer: Int64(min(999, max(0, nearest.rangeM.rounded()))))
            let fast = p.maxThreat == .fastApproach
            let row = Rect(x: c.x, y: c.y, width: c.width, height: small.height)
            if fast { canvas.fill(row) }
            canvas.drawText(text, font: small, in: row, alignment: .right, on: !fast)
        }
        for i in 0..<p.count {
            let t = p[i]
            let y = radarRow(t.rangeM, c)
            if t.threat == .fastApproach {
                canvas.fill(Rect(x: c.x + g.px(1), y: y, width: c.width - g.px(2), height: g.px(4)))
            } else {
                let w = min(g.px(8), c.width - g.px(2))
                canvas.fill(Rect(x: mid - w / 2, y: y, width: w, height: g.px(4)), on: false)
                canvas.strokeRect(Rect(x: mid - w / 2, y: y, width: w, height: g.px(4)), thickness: g.px(1))
            }
        }
    }

    /// What makes the column look different: its state, the nearest distance and each vehicle's
    /// row and threat. Returns the new key length (`drawnKeyBytesMax` bounds it: 8 vehicles).
    mutating func appendRadarKey(_ model: ScreenModel, at n: Int, column c: Rect) -> Int {
        var k = n
        keyScratch[k] = 0xFE; k += 1
        keyScratch[k] = model.sensor(.radar).rawValue; k += 1
        let p = model.radar
        let nearest = Int(min(999, max(0, (p.nearest?.rangeM ?? 0).rounded())))
        keyScratch[k] = UInt8(truncatingIfNeeded: nearest); keyScratch[k + 1] = UInt8(truncatingIfNeeded: nearest >> 8); k += 2
        keyScratch[k] = UInt8(p.count); k += 1
        for i in 0..<p.count {
            let y = radarRow(p[i].rangeM, c)
            keyScratch[k] = UInt8(truncatingIfNeeded: y); keyScratch[k + 1] = UInt8(truncatingIfNeeded: y >> 8)
            keyScratch[k + 2] = p[i].threat.rawValue
            k += 3
        }
        return k
    }
}

extension RadarColumn {
    /// The radar column on the screen catalogue's ride (goldens, docs/screens).
    static func entries(ride: ScreenModel) -> [ScreenCatalogue.Entry] {
        var out: [ScreenCatalogue.Entry] = []
        func add(_ name: String, _ caption: String, _ m: ScreenModel) {
            // At every size: ScreenCatalogue.entries() draws each at 128x32 and 400x240 too.
            out.append(ScreenCatalogue.Entry(name: name, caption: caption, height: 64, model: m))
        }
        var r = ride
        r.sensors[Int(SensorRole.radar.rawValue)] = .connected
        r.radar = RadarPicture([RadarTarget(rangeM: 62, closingSpeedMps: 8, threat: .approaching),
                                RadarTarget(rangeM: 28, closingSpeedMps: 14, threat: .fastApproach)])
        add("radar-vehicles", "Rear radar: two vehicles behind, the nearest 28 m away closing fast (filled), the other approaching (outline); the page beside the column", r)
        r.mode = .running(page: 1)
        r.radar = RadarPicture([RadarTarget(rangeM: 95, closingSpeedMps: 6, threat: .approaching)])
        add("radar-power-page", "Rear radar on the second data page: one vehicle approaching at 95 m", r)
        r.mode = .running(page: 0)
        var paired = r
        paired.pairingCode = 482_913
        add("radar-pairing", "Rear radar with a companion's pairing code: the page beside the column and above the status line", paired)
        r.radar = RadarPicture()
        add("radar-clear", "Rear radar connected, the road behind clear", r)
        r.sensors[Int(SensorRole.radar.rawValue)] = .lost
        add("radar-lost", "Rear radar lost (switched off or out of reach): the column says so, never an empty road", r)
        r.sensors[Int(SensorRole.radar.rawValue)] = .searching
        add("radar-searching", "Rear radar paired, not heard from yet", r)
        return out
    }
}
