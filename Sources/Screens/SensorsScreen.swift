import AppCore
import Display
import RideModel

/// The Sensors screen (AppCore's `SensorsMenu`): a title bar, the rows around the selected one
/// (inverted), and what the buttons do on the last line. 21 characters of the small font fit a
/// row: "HR  OK   81% Strap", "PWR LOST --  Crank", "SEARCH FOR SENSORS", and while searching
/// "S+C -67dB Wahoo CSC". A 32-pixel display shows the title and the selected row only.
extension ScreenRenderer {
    mutating func drawSensors(_ menu: SensorsMenu) {
        let small = fonts.list
        // Above a pairing code's status line on a short panel (`height`), the bar and the row
        // close up on their blank rows, as the summary's, and the one row shown (the selected
        // one) is not inverted.
        let tight = !tall && small.height + geometry.px(1) + small.height > height
        let rowHeight = tight ? small.height - geometry.px(1) : small.height
        let bar = Rect(x: 0, y: 0, width: width, height: rowHeight)
        let textY = tight ? -geometry.px(1) : 0
        canvas.fill(bar)
        text.clear()
        switch menu.page {
        case .list: text.append("SENSORS")
        case .confirmForget: text.append("FORGET?")
        case .found:
            text.append("FOUND ")
            text.append(integer: Int64(menu.found.count))
        }
        canvas.drawText(text, font: small, x: geometry.px(2), y: textY, on: false)
        let corner = Rect(x: width - small.widthPx(count: 6) - geometry.px(4), y: textY, width: small.widthPx(count: 6) + geometry.px(2), height: small.height)
        if case .found = menu.page, let left = menu.searchSecondsLeft {
            text.clear()
            text.append(integer: Int64(left))
            text.append("s")
            canvas.drawText(text, font: small, in: corner, alignment: .right, on: false)
        } else if case .found = menu.page {
            canvas.drawText("DONE", font: small, in: corner, alignment: .right, on: false)
        }
        // The rows between the title bar and the hint line (a tall panel's last row).
        let firstRowY = tight ? bar.maxY - geometry.px(1) : bar.maxY + geometry.px(1)
        let hintY = height - small.height
        let visible = tall ? max(1, (hintY - geometry.px(1) - firstRowY) / rowHeight) : 1
        let rows = menu.rowCount
        var first = max(0, menu.cursor - visible / 2)
        first = max(0, min(first, rows - visible))
        if rows == 0 {
            canvas.drawText(menu.searchSecondsLeft != nil ? "searching..." : "nothing found",
                            font: small, x: geometry.px(2), y: tight ? firstRowY : bar.maxY + geometry.px(2))
        }
        for r in first..<min(rows, first + visible) {
            let y = firstRowY + (r - first) * rowHeight
            writeSensorsRow(menu, r)
            let selected = r == menu.cursor && !tight
            if selected { canvas.fill(Rect(x: 0, y: y, width: width, height: rowHeight)) }
            // As many characters as the row holds (the name's end is cut).
            canvas.drawText(text.prefix((width - geometry.px(2)) / small.width), font: small, x: geometry.px(2), y: y, on: !selected)
        }
        guard tall else { return }
        text.clear()
        if let message = menu.message {
            text.append(message)
        } else {
            switch menu.page {
            case .list: text.append(menu.cursor < menu.paired.count ? "LAP forget START back" : "LAP search START back")
            case .confirmForget: text.append("LAP forget  else keep")
            case .found: text.append(menu.found.isEmpty ? "START back" : "LAP pair  START back")
            }
        }
        canvas.horizontalLine(x: 0, y: hintY - geometry.px(1), length: width, thickness: geometry.px(1))
        canvas.drawText(text.prefix(width / small.width), font: small, x: 0, y: hintY)
    }

    /// One row's text into `text`.
    mutating func writeSensorsRow(_ menu: SensorsMenu, _ r: Int) {
        text.clear()
        switch menu.page {
        case .list, .confirmForget:
            guard r < menu.paired.count else { text.append("SEARCH FOR SENSORS"); return }
            let p = menu.paired[r]
            pad(p.kind.label, 4)
            pad(Self.stateShort(p.state), 5)
            if let b = p.batteryPercent {
                let before = text.count
                text.append(integer: Int64(max(0, min(100, b))))
                text.append("%")
                for _ in (text.count - before)..<5 { text.append(UInt8(ascii: " ")) }
            } else {
                pad("--", 5)
            }
            appendName(p.name.isEmpty ? Self.shortID(p.id) : p.name)
        case .found:
            guard r < menu.found.count else { return }
            let f = menu.found[r]
            pad(f.kind.label, 4)
            if let rssi = f.rssi {
                let before = text.count
                text.append(integer: Int64(rssi))
                text.append("dB")
                for _ in (text.count - before)..<6 { text.append(UInt8(ascii: " ")) }
            }
            appendName(f.name.isEmpty ? Self.shortID(f.id) : f.name)
        }
    }

    mutating func pad(_ s: String, _ width: Int) {
        let before = text.count
        text.append(s)
        while text.count - before < width { text.append(UInt8(ascii: " ")) }
    }

    /// The name in the font's characters (ASCII; anything else is shown as '?').
    mutating func appendName(_ s: String) {
        for c in s.unicodeScalars.prefix(21) {
            text.append(c.isASCII && c.value >= 0x20 && c.value < 0x7F ? UInt8(c.value) : UInt8(ascii: "?"))
        }
    }

    static func stateShort(_ state: SensorState) -> String {
        switch state {
        case .connected: "OK"
        case .searching: "WAIT"
        case .stale: "OLD"
        case .lost: "LOST"
        case .notConfigured: "OFF"
        }
    }

    /// "ble:C0:FF:EE:00:11:22" -> "..00:11:22"; "ant:12345/11" -> "ANT 12345".
    static func shortID(_ id: String) -> String {
        if id.hasPrefix("ant:") {
            let n = id.dropFirst(4).split(separator: "/").first.map(String.init) ?? ""
            return "ANT " + n
        }
        return ".." + String(id.suffix(8))
    }
}
