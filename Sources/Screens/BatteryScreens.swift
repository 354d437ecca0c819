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
        let body = Rect(x: x, y: y, width: Self.batteryIconWidth - 2, height: Self.batteryIconHeight)
        canvas.strokeRect(body, on: on)
        canvas.fill(Rect(x: body.maxX, y: y + 2, width: 2, height: Self.batteryIconHeight - 4), on: on)
        let inner = body.insetBy(2)
        guard let p = b.percent else {
            canvas.horizontalLine(x: inner.x + 2, y: y + Self.batteryIconHeight / 2, length: inner.width - 4, on: on)
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

    /// Icon and charge right-aligned in `rect` (one small-font row high).
    mutating func drawBatteryRow(_ b: BatteryStatus, in rect: Rect, on: Bool = true) {
        writeBatteryPercent(b)
        let textWidth = Font.small.widthPx(count: text.count)
        canvas.drawText(text, font: .small, in: rect, alignment: .right, on: on)
        let iconX = rect.maxX - textWidth - 2 - Self.batteryIconWidth
        drawBatteryIcon(b, x: iconX, y: rect.y + (Font.small.height - Self.batteryIconHeight) / 2, on: on)
    }

    /// The idle screen's battery: top right (the storage word has that place when the card is
    /// not well; the battery then goes to the bottom row), the time left bottom right.
    mutating func drawIdleBattery(_ model: ScreenModel) {
        guard let b = model.battery else { return }
        if model.storage == .ok {
            drawBatteryRow(b, in: Rect(x: 48, y: 2, width: width - 48, height: 12))
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
        canvas.fill(Rect(x: 80, y: 52, width: width - 80, height: 12), on: false)
        canvas.drawText(text, font: .small, in: Rect(x: 80, y: 52, width: width - 80, height: 12), alignment: .right)
    }

    /// The paused screen's banner holds the charge at its right end.
    mutating func drawPausedBattery(_ model: ScreenModel) {
        guard let b = model.battery, tall else { return }
        drawBatteryRow(b, in: Rect(x: 90, y: 2, width: width - 91, height: 12), on: false)
    }

    /// Over everything while the unit powers off: why, and what became of the ride.
    mutating func drawPoweringOff(_ reason: PowerOffReason, _ model: ScreenModel) {
        canvas.clear()
        let banner = Rect(x: 0, y: 0, width: width, height: 16)
        canvas.fill(banner)
        canvas.drawText("POWERING OFF", font: .medium, in: banner, alignment: .center, on: false)
        let why = reason == .batteryCritical ? "BATTERY EMPTY" : "POWER BUTTON"
        let ride: String? = switch model.mode {
        case .paused: "RIDE PAUSED, KEPT"
        case .summary, .confirmDiscard: "RIDE SAVED"
        default: nil
        }
        if tall {
            canvas.drawText(why, font: .small, in: Rect(x: 0, y: 22, width: width, height: 12), alignment: .center)
            if let ride { canvas.drawText(ride, font: .small, in: Rect(x: 0, y: 36, width: width, height: 12), alignment: .center) }
            if let b = model.battery { drawBatteryRow(b, in: Rect(x: 0, y: 51, width: width - 1, height: 12)) }
        } else {
            canvas.drawText(ride == nil ? why : ride!, font: .small, in: Rect(x: 0, y: 18, width: width, height: 12), alignment: .center)
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
        var small = i
        small.battery = BatteryStatus(percent: 82, timeLeftMinutes: 580, level: .ok)
        add("small-battery-idle", "128x32 panel: idle with the battery's charge", height: 32, small)
        return out
    }
}
