import AppCore
import Display
@testable import Screens
import Testing

/// Every panel size: nothing is drawn outside the panel, no field's ink leaves its frame
/// whatever the width of its value, frames never overlap, and the widest values a ride
/// plausibly has fit their fields without clipping.
struct LayoutPropertyTests {
    /// The supported panels: the OLEDs, the 2.7" and the 1.28" memory LCDs.
    static let sizes = [(128, 32), (128, 64), (128, 128), (400, 240)]

    struct Generator {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
    }

    /// Every catalogue screen (and, for the 1.28" panel, the same screen values) drawn on its
    /// panel asks for no pixel outside it.
    @Test func everyScreenStaysInsideItsPanel() {
        var models: [(String, Int, Int, ScreenModel)] = ScreenCatalogue.entries().map { ($0.name, $0.width, $0.height, $0.model) }
        models += ScreenCatalogue.entries().filter { $0.width == 128 && $0.height == 64 }.map { ("128x128 \($0.name)", 128, 128, $0.model) }
        for (name, w, h, model) in models {
            var r = ScreenRenderer(layouts: .standard(width: w, height: h))
            var fb = Framebuffer(width: w, height: h)
            r.render(model, into: &fb)
            #expect(r.canvas.inkOutside == 0, "\(name) (\(w)x\(h)) draws \(r.canvas.inkOutside) times outside the panel")
        }
    }

    /// Frames lie in the running area and do not overlap; a value of any width (1...24
    /// characters of digits and punctuation) and its caption never ink outside the field.
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func fieldsKeepTheirInkInsideTheirFrameForAnyValueWidth(_ size: String) {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        let seed: UInt64 = 0x1A70_0000 + UInt64(wh[0] * 1000 + wh[1])
        var g = Generator(state: seed)
        var r = ScreenRenderer(layouts: layouts)
        let charset = Array("0123456789:.--".utf8)
        // The pages as laid out above the status line (a pairing code while riding) too.
        for page in layouts.runningPages + layouts.statusLinePages {
            let frames = page.fields.map(\.frame) + page.graphics.map(\.frame)
            for (i, a) in frames.enumerated() {
                #expect(a.intersection(layouts.geometry.bounds) == a, "\(size) \(page.name): \(a) outside the panel")
                for b in frames[(i + 1)...] {
                    let o = a.intersection(b)
                    #expect(o.width == 0 || o.height == 0, "\(size) \(page.name): \(a) overlaps \(b)")
                }
            }
            for field in page.fields {
                for _ in 0..<60 {
                    let n = 1 + g.next(TextBuffer.capacityMax)
                    let value = (0..<n).map { _ in charset[g.next(charset.count)] }
                    let image = r.drawFieldAlone(field, value: value)
                    var outside = 0
                    for y in 0..<image.height { for x in 0..<image.width where image[x, y] {
                        if x < field.frame.x || x >= field.frame.maxX || y < field.frame.y || y >= field.frame.maxY { outside += 1 }
                    } }
                    #expect(outside == 0, "seed \(seed) \(size) \(page.name) \(field.content) \"\(String(decoding: value, as: UTF8.self))\": \(outside) pixels outside \(field.frame)")
                    if outside > 0 { return }
                }
            }
        }
    }

    /// The widest value a ride plausibly shows in each field fits beside its caption without
    /// being clipped, on every panel.
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func plausibleValuesFitUnclipped(_ size: String) {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        let r = ScreenRenderer(layouts: layouts)
        for page in layouts.runningPages + layouts.statusLinePages {
            for field in page.fields {
                let widest = Self.widest(field.content)
                let s = r.valueSetting(field, count: widest.utf8.count)
                // Not clipped in height either, nor the caption over the value: the field alone
                // has exactly the ink of its caption and its value drawn apart.
                var r2 = r
                let drawn = Self.ink(r2.drawFieldAlone(field, value: Array(widest.utf8)))
                let apart = Self.ink(text: widest, s.font) + (field.label == .none ? 0 : Self.ink(text: s.label, layouts.geometry.fonts.label))
                #expect(drawn == apart, "\(size) \(page.name) \(field.content): \(apart - drawn) pixels of \"\(widest)\" or its caption lost in \(field.frame)")
                #expect(s.fits, "\(size) \(page.name) \(field.content): \"\(widest)\" needs \(s.font.widthPx(count: widest.utf8.count)) px, \(s.available) available in \(field.frame)")
            }
        }
    }

    static func ink(_ fb: Framebuffer) -> Int {
        var n = 0
        for y in 0..<fb.height { for x in 0..<fb.width where fb[x, y] { n += 1 } }
        return n
    }

    static func ink(text: String, _ font: Font) -> Int {
        var fb = Framebuffer(width: font.widthPx(count: text.utf8.count) + 8, height: (font.height + 8 + 7) / 8 * 8)
        _ = fb.drawText(text.utf8, font: font, x: 4, y: 4)
        return ink(fb)
    }

    /// The widest text of each field on a long ride: 23:59:59 of riding, 999.9 km, 99.9 km/h,
    /// 2000 W, 220 bpm, an altitude of -432 or 4800 m, 9999 m of ascent, a -25.0 % grade.
    static func widest(_ c: FieldContent) -> String {
        switch c {
        case .timer, .elapsed, .lapTime: "23:59:59"
        case .lapNumber: "999"
        case .metric(let m):
            switch m {
            case .speed, .averageSpeed, .maxSpeed, .lapAverageSpeed: "99.9"
            case .distance, .lapDistance: "999.9"
            case .heartRate, .averageHeartRate, .maxHeartRate, .lapAverageHeartRate, .cadence, .averageCadence: "220"
            case .power, .averagePower, .maxPower, .normalizedPower, .lapAveragePower: "2000"
            case .heartRateZone, .powerZone: "7"
            case .altitude: "-432"
            case .ascent: "9999"
            case .grade: "-25.0"
            }
        }
    }
}
