import AppCore
import Battery
import Display

/// The unit's battery on screen (docs/power.md, docs/screens.md): an icon and the charge on the
/// idle and paused screens, the time left at the bottom of the idle screen, and the powering-off
/// screen over everything. Nothing is drawn without a gauge (`ScreenModel.battery` nil).
extension ScreenRenderer {
    /// Icon: a 12×7 outline with a 1-pixel nub, filled in proportion to the charge; hollow
    /// with a dash when the charge is unknown.
    static let batteryIconWidth = 14
    static let batteryIconHeight = 7

    mutating func drawBatteryIcon(_ b: BatteryStatus, x: Int, y: Int, on: Bool = true) {
        guard drawsBattery else { return }
        let g = geometry
        let body = Rect(x: x, y: y, width: g.px(Self.batteryIconWidth - 2), height: g.px(Self.batteryIconHeight))
        canvas.strokeRect(body, on: on, thickness: g.px(1))
        canvas.fill(Rect(x: body.maxX, y: y + g.px(2), width: g.px(2), height: g.px(Self.batteryIconHeight - 4)), on: on)
        let inner = body.insetBy(g.px(2))
        guard let p = b.percent else {
            canvas.fill(Rect(x: inner.x + g.px(2), y: y + body.height / 2, width: inner.width - g.px(4), height: g.px(1)), on: on)
            return
        }
        let filled = p <= 0 ? 0 : max(1, (inner.width * min(100, p) + 50) / 100)
        canvas.fill(Rect(x: inner.x, y: inner.y, width: filled, height: inner.height), on: on)
    }

    /// "82%" (or "--%"), then "CHG" while charging, into `text`.
    mutating func writeBatteryPercent(_ b: BatteryStatus) {
        text.clear()
        if let p = b.percent { text.append(integer: Int64(p)) } else { text.appendMissing() }
        text.append(UInt8(ascii: "%"))
    }

    /// Appends the time left as the rider reads it: "5h10" (or "45m" under an hour), "CHG"
    /// while charging, nothing when unknown.
    mutating func appendBatteryTimeLeft(_ b: BatteryStatus) {
        if b.charging { text.append("CHG"); return }
        guard let m = b.timeLeftMinutes else { return }
        if m >= 60 {
            text.append(integer: Int64(m / 60))
            text.append(UInt8(ascii: "h"))
            text.append(integer: Int64(m % 60), minimumDigits: 2)
        } else {
            text.append(integer: Int64(m))
            text.append(UInt8(ascii: "m"))
        }
    }

    /// The running pages' battery (a page has no room for text at 128×64): a charge gauge at
    /// the foot of the page dots' column (`runningGauge`), filled from the bottom in proportion
    /// to the charge, hollow when unknown. The number and the time left are on the idle and
    /// paused screens and in the alerts. Inverted (`on` false) in the 128×32 paused banner.
    mutating func drawRunningBattery(_ model: ScreenModel, in gauge: Rect, on: Bool = true) {
        guard let b = model.battery, drawsBattery else { return }
        let edge = geometry.px(1), x = gauge.x, w = gauge.width
        // The nub, then the body's outline.
        canvas.fill(Rect(x: x + edge, y: gauge.y, width: max(edge, w - 2 * edge), height: edge), on: on)
        let body = Rect(x: x, y: gauge.y + edge, width: w, height: gauge.height - edge)
        canvas.strokeRect(body, on: on, thickness: edge)
        let inner = Rect(x: x + edge, y: body.y + edge, width: w - 2 * edge, height: body.height - 2 * edge)
        guard let p = b.percent else { return }
        let filled = p <= 0 ? 0 : max(edge, (inner.height * min(100, p) + 50) / 100)
        canvas.fill(Rect(x: inner.x, y: inner.maxY - filled, width: max(edge, inner.width), height: filled), on: on)
    }

    /// The gauge's height (128×64 pixels, scaled), and the least it is drawn at where the page
    /// dots leave less (a 32-row panel with the navigation pages).
    static let runningGaugeHeight = 12
    static let runningGaugeHeightMin = 7

    /// Where the running pages' gauge goes below `dots` page dots, and the dots' pitch that
    /// leaves it room: the foot of the dots' column, `px(2)` under the last dot, full height
    /// where the column has room, shorter (down to `runningGaugeHeightMin`), then the dots
    /// closer together, where it has not. Nil when even that does not fit.
    func runningGauge(dots: Int) -> (gauge: Rect, dotPitch: Int)? {
        let g = geometry, side = g.pageDotPx, gap = g.px(2)
        var pitch = max(side, min(g.pageDotPitch, (height - g.px(2)) / max(1, dots)))
        func dotsEnd(_ pitch: Int) -> Int { dots > 1 ? g.px(2) + (dots - 1) * pitch + side : 0 }
        let full = g.px(Self.runningGaugeHeight), least = g.px(Self.runningGaugeHeightMin)
        if height - least < dotsEnd(pitch) + gap, dots > 1 {
            pitch = max(side, (height - least - gap - g.px(2) - side) / (dots - 1))
        }
        let h = min(full, height - dotsEnd(pitch) - gap)
        guard h >= least else { return nil }
        assert(height - h >= dotsEnd(pitch) + gap && h <= full, "the gauge is below the dots and no taller than its full height")
        return (Rect(x: width - side, y: height - h, width: side, height: h), pitch)
    }

    /// The part of a running page the gauge keeps clear: its rect and a pixel (scaled) round
    /// it. The page's rules, graphics and fields that reach into it end left of it.
    func runningGaugeKeepOut(_ gauge: Rect) -> Rect { gauge.insetBy(-geometry.px(1)) }

    /// `r` ended left of `keepOut` where they share rows.
    static func trimmed(_ r: Rect, leftOf keepOut: Rect?) -> Rect {
        guard let k = keepOut, r.intersection(k).width > 0, r.intersection(k).height > 0 else { return r }
        return Rect(x: r.x, y: r.y, width: max(0, k.x - r.x), height: r.height)
    }

    /// What the running gauge shows, appended to the page's key (the page redraws when the
    /// gauge would look different). Returns the new key length.
    mutating func appendBatteryKey(_ model: ScreenModel, at n: Int) -> Int {
        guard let b = model.battery, n + 2 <= Self.drawnKeyBytesMax else { return n }
        keyScratch[n] = b.percent.map { UInt8(clamping: $0) } ?? 0xFE
        keyScratch[n + 1] = 0xFF
        return n + 2
    }

    /// Icon and charge right-aligned in `rect` (one small-font row high).
    mutating func drawBatteryRow(_ b: BatteryStatus, in rect: Rect, on: Bool = true) {
        guard drawsBattery else { return }
        writeBatteryPercent(b)
        let font = fonts.text
        let textWidth = font.widthPx(count: text.count)
        canvas.drawText(text, font: font, in: rect, alignment: .right, on: on)
        let g = geometry
        let iconX = rect.maxX - textWidth - g.px(2) - g.px(Self.batteryIconWidth)
        drawBatteryIcon(b, x: iconX, y: rect.y + (font.height - g.px(Self.batteryIconHeight)) / 2, on: on)
    }

    /// The idle screen's battery: top right (the storage word has that place when the card is
    /// not well; the battery then goes to the bottom row), the time left bottom right.
    mutating func drawIdleBattery(_ model: ScreenModel) {
        guard let b = model.battery else { return }
        let g = geometry, row = fonts.text.height
        // Right of "READY" (the title font's five letters and a gap).
        let left = fonts.title.widthPx(count: 6)
        if model.storage == .ok {
            drawBatteryRow(b, in: Rect(x: left, y: g.px(2), width: width - left, height: row))
        }
        guard tall else { return }
        if model.storage != .ok {
            // Charge and time left share the bottom row's right side.
            writeBatteryPercent(b)
            text.append(UInt8(ascii: " "))
        } else {
            text.clear()
        }
        appendBatteryTimeLeft(b)
        // The bottom row's right part, beside "START to ride" (13 characters and a gap).
        let x = fonts.text.widthPx(count: 14), y = height - row
        canvas.fill(Rect(x: x, y: y, width: width - x, height: row), on: false)
        canvas.drawText(text, font: fonts.text, in: Rect(x: x, y: y, width: width - x, height: row), alignment: .right)
    }

    /// The paused screen's banner holds the charge at its right end: the icon and the number
    /// where the banner's word leaves room for both, the icon alone where it does not (a
    /// companion's pairing code on a 128-pixel panel). Returns the room left of it for the word.
    /// On a 32-row panel, whose banner also holds the timer, the running pages' gauge instead.
    mutating func drawPausedBattery(_ model: ScreenModel, banner: Rect, word: Int) -> Int {
        guard let b = model.battery else { return banner.width }
        let g = geometry
        if !tall {
            let gauge = Rect(x: banner.maxX - g.px(2) - g.pageDotPx, y: banner.y + g.px(2), width: g.pageDotPx,
                             height: min(g.px(Self.runningGaugeHeight), banner.height - g.px(4)))
            drawRunningBattery(model, in: gauge, on: false)
            return gauge.x - g.px(2)
        }
        let icon = g.px(Self.batteryIconWidth), right = banner.maxX - g.px(1)
        writeBatteryPercent(b)
        let row = icon + g.px(2) + fonts.text.widthPx(count: text.count)
        // The word centred in what is left, a pixel apart at least.
        if (right - row - g.px(2) - word) / 2 >= g.px(2) {
            drawBatteryRow(b, in: Rect(x: right - row, y: g.px(2), width: row, height: fonts.text.height), on: false)
            return right - row - g.px(2)
        }
        drawBatteryIcon(b, x: right - icon, y: banner.y + (banner.height - g.px(Self.batteryIconHeight)) / 2, on: false)
        return right - icon - g.px(2)
    }

    /// Over everything while the unit powers off: why, and what became of the ride.
    mutating func drawPoweringOff(_ reason: PowerOffReason, _ model: ScreenModel) {
        canvas.clear()
        let g = geometry, row = fonts.text.height
        let banner = Rect(x: 0, y: 0, width: width, height: fonts.title.height)
        canvas.fill(banner)
        canvas.drawText("POWERING OFF", font: fonts.title, in: banner, alignment: .center, on: false)
        let why = reason == .batteryCritical ? "BATTERY EMPTY" : "POWER BUTTON"
        let ride: String? = switch model.mode {
        case .paused: "RIDE PAUSED, KEPT"
        case .summary, .confirmDiscard: "RIDE SAVED"
        default: nil
        }
        if tall {
            let y0 = banner.maxY + g.px(6)
            canvas.drawText(why, font: fonts.text, in: Rect(x: 0, y: y0, width: width, height: row), alignment: .center)
            if let ride { canvas.drawText(ride, font: fonts.text, in: Rect(x: 0, y: y0 + row + g.px(2), width: width, height: row), alignment: .center) }
            if let b = model.battery { drawBatteryRow(b, in: Rect(x: 0, y: height - row - g.px(1), width: width - g.px(1), height: row)) }
        } else {
            canvas.drawText(ride == nil ? why : ride!, font: fonts.text, in: Rect(x: 0, y: banner.maxY + g.px(2), width: width, height: row), alignment: .center)
        }
    }
}

extension ScreenCatalogue {
    /// The battery's screens (docs/power.md): idle and paused with the charge and the time
    /// left, charging, the alerts, and the powering-off screen.
    static func batteryEntries(ride: ScreenModel, idle: ScreenModel) -> [Entry] {
        var out: [Entry] = []
        func add(_ name: String, _ caption: String, height: Int = 64, _ model: ScreenModel) {
            out.append(Entry(name: name, caption: caption, height: height, model: model))
        }
        var i = idle
        i.mode = .idle
        i.battery = BatteryStatus(percent: 82, timeLeftMinutes: 9 * 60 + 40, charging: false, level: .ok)
        add("battery-idle", "Idle with a battery gauge: the charge (top right) and the time left at the measured drain until the unit powers off (bottom right)", i)
        i.battery = BatteryStatus(percent: 64, timeLeftMinutes: nil, charging: true, level: .ok)
        add("battery-idle-charging", "Idle while the battery charges (CHG)", i)
        var r = ride
        r.battery = BatteryStatus(percent: 64, timeLeftMinutes: 6 * 60 + 5, level: .ok)
        add("battery-running-1", "Running with a battery gauge: the charge at the foot of the page dots' column", r)
        var p = ride
        p.mode = .paused
        p.battery = BatteryStatus(percent: 17, timeLeftMinutes: 95, charging: false, level: .low)
        add("battery-paused", "Paused: the charge in the banner", p)
        var low = ride
        low.battery = BatteryStatus(percent: 20, timeLeftMinutes: 110, level: .low)
        low.overlay = .lowBattery(percent: 20)
        add("alert-low-battery", "Alert: the unit's battery reached a warning level (20 %, then 10 %)", low)
        var off = ride
        off.mode = .paused
        off.battery = BatteryStatus(percent: 4, timeLeftMinutes: 0, level: .critical)
        off.poweringOff = .batteryCritical
        add("powering-off-battery", "Powering off at the critical level: the ride is paused and kept; after a recharge it is recovered, paused", off)
        var button = idle
        button.mode = .idle
        button.poweringOff = .powerButton
        add("powering-off-button", "Powering off: the power button was held", button)
        return out
    }
}
