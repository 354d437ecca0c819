import AppCore
import Battery
import Display
@testable import Screens
import Testing

/// The unit's battery (issue 31) is on every running and paused screen of the catalogue (data,
/// climb, map and navigation pages, with and without radar, course or a pairing code) at every
/// panel size (128x64, 128x32, 400x240, 128x128), at every charge the gauge can show, and covers
/// nothing: its pixels are at least a (scaled) pixel apart from every other element's bounding
/// box. (At 400x240 the running gauge sat against the cadence value; at 128x32 the running and
/// paused screens showed no battery at all.)
struct BatteryEverywhereTests {
    static let levels: [BatteryStatus] = [
        BatteryStatus(percent: 100, timeLeftMinutes: 11 * 60, level: .ok),
        BatteryStatus(percent: 64, timeLeftMinutes: 6 * 60 + 5, level: .ok),
        BatteryStatus(percent: 17, timeLeftMinutes: 95, level: .low),
        BatteryStatus(percent: 9, timeLeftMinutes: 40, level: .veryLow),
        BatteryStatus(percent: 4, timeLeftMinutes: 0, level: .critical),
        BatteryStatus(percent: 0, timeLeftMinutes: 0, level: .critical),
        BatteryStatus(percent: 55, timeLeftMinutes: nil, charging: true, level: .ok),
        BatteryStatus(percent: nil),
    ]

    /// The catalogue's running and paused screens without an alert over them (an alert covers
    /// the page, battery included), at every size, and the 128x64 ones on the 128x128 panel.
    static func screens() -> [ScreenCatalogue.Entry] {
        var entries = ScreenCatalogue.entries().filter { e in
            guard e.model.poweringOff == nil, e.model.overlay == nil else { return false }
            switch e.model.mode {
            case .running, .paused: return true
            default: return false
            }
        }
        entries += entries.filter { $0.width == 128 && $0.height == 64 }.map {
            ScreenCatalogue.Entry(name: "square-" + $0.name, caption: $0.caption, width: 128, height: 128, model: $0.model)
        }
        return entries
    }

    /// What is wrong with the battery on `model` at this size, if anything.
    static func problem(_ model: ScreenModel, width: Int, height: Int) -> String? {
        let layouts = ScreenLayouts.standard(width: width, height: height)
        // The screen laid out with the battery, without its ink.
        var plain = Framebuffer(width: width, height: height)
        var r0 = ScreenRenderer(layouts: layouts)
        r0.drawsBattery = false
        r0.render(model, into: &plain)
        var shown = Framebuffer(width: width, height: height)
        var r1 = ScreenRenderer(layouts: layouts)
        r1.render(model, into: &shown)
        // The battery: every pixel the gauge changed.
        var minX = width, minY = height, maxX = -1, maxY = -1, on = 0, off = 0
        for y in 0..<height {
            for x in 0..<width where shown[x, y] != plain[x, y] {
                minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
                if shown[x, y] { on += 1 } else { off += 1 }
            }
        }
        guard maxX >= 0 else { return "no battery" }
        let battery = Rect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
        // A pixel of blank around it (two on the 400x240 panel, which draws everything twice as big).
        let gap = width >= 256 ? 2 : 1
        let clearance = battery.insetBy(-gap)
        let elements: [Rect]
        if off == 0 {
            // Lit on the page: apart from every element of the screen without it (the ruled
            // grid's lines each an element).
            elements = InkBlobs.elements(plain, ruleMin: 16 * gap)
        } else if on == 0 {
            // Cut out of a filled banner: inside it, apart from the banner's words.
            guard let banner = InkBlobs.boxes(plain).first(where: { $0.intersection(clearance) == clearance }) else {
                return "battery \(battery) drawn dark but not inside a filled area"
            }
            elements = InkBlobs.boxes(plain, lit: false, in: banner)
        } else {
            return "battery \(battery) both lights and clears pixels (drawn over something)"
        }
        if let hit = elements.first(where: { InkBlobs.overlaps($0, clearance) }) {
            return "battery \(battery) within \(gap) px of an element at \(hit)"
        }
        return nil
    }

    @Test func everyRunningAndPausedScreenShowsTheBatteryApartFromEverything() {
        var failures: [String] = []
        var checked = 0
        let entries = Self.screens()
        #expect(entries.count > 80)
        var sizes = Set<Int>()
        for e in entries {
            sizes.insert(e.width * 1000 + e.height)
            for b in Self.levels {
                var m = e.model
                m.battery = b
                checked += 1
                if let p = Self.problem(m, width: e.width, height: e.height) {
                    failures.append("\(e.name) \(b.percent.map { "\($0)%" } ?? "--%")\(b.charging ? " charging" : ""): \(p)")
                }
            }
        }
        #expect(sizes == [128_064, 128_032, 400_240, 128_128])
        // One line per screen: its first failing charge.
        var screens: [String] = []
        for f in failures where !screens.contains(where: { f.hasPrefix(String($0.prefix { $0 != " " }) + " ") }) { screens.append(f) }
        #expect(failures.isEmpty, "\(failures.count) of \(checked), \(screens.count) screens:\n\(screens.prefix(60).joined(separator: "\n"))")
    }

    /// The paused screen with a companion's pairing code in the banner, and a ride past ten
    /// hours (the longest timer), on every panel.
    @Test(arguments: [(128, 64), (128, 32), (400, 240), (128, 128)])
    func pausedWithAPairingCodeAndALongRide(width: Int, height: Int) {
        var m = ScreenModel()
        m.mode = .paused
        m.timerMs = 10 * 3_600_000 + 59 * 60_000 + 59_000
        m.elapsedMs = 11 * 3_600_000 + 2 * 60_000
        for code: UInt32? in [nil, 482_913] {
            m.pairingCode = code
            for b in Self.levels {
                m.battery = b
                let p = Self.problem(m, width: width, height: height)
                #expect(p == nil, "\(width)x\(height) code \(code.map(String.init) ?? "none") \(b.percent ?? -1)%: \(p ?? "")")
            }
        }
    }
}
