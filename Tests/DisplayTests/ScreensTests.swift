import AppCore
import Display
@testable import Screens
import Testing

@Suite struct ScreensTests {
    func text(_ content: FieldContent, _ model: ScreenModel) -> String {
        var t = TextBuffer()
        ValueFormat.write(content, of: model, into: &t)
        return String(decoding: Array(t), as: UTF8.self)
    }

    @Test func missingDataIsDashesNeverZero() {
        let empty = ScreenModel()
        for m in Metric.allCases {
            #expect(text(.metric(m), empty) == "--", "\(m) without data")
            var zero = ScreenModel()
            zero[m] = 0
            #expect(text(.metric(m), zero) != "--", "\(m) = 0 is a real value")
            var bad = ScreenModel()
            bad[m] = .nan
            #expect(text(.metric(m), bad) == "--")
            bad[m] = .infinity
            #expect(text(.metric(m), bad) == "--")
        }
        #expect(text(.lapNumber, empty) == "--")
        #expect(text(.timer, empty) == "0:00", "a clock is always known")
    }

    @Test func formatsUnits() {
        var m = ScreenModel()
        m[.speed] = 10          // m/s
        m[.distance] = 32_449.6
        m[.power] = 234.5
        m.timerMs = 3_723_999
        m.lapTimerMs = 59_000
        #expect(text(.metric(.speed), m) == "36.0")
        #expect(text(.metric(.distance), m) == "32.45")
        #expect(text(.metric(.power), m) == "235")
        #expect(text(.timer, m) == "1:02:03")
        #expect(text(.lapTime, m) == "0:59")
        m[.distance] = 123_456
        #expect(text(.metric(.distance), m) == "123.5")
    }

    func render(_ model: ScreenModel, height: Int = 64) -> Framebuffer {
        var r = ScreenRenderer(layouts: .standard(height: height))
        var fb = Framebuffer(width: 128, height: height)
        r.render(model, into: &fb)
        return fb
    }

    func region(_ fb: Framebuffer, _ rect: Rect) -> [Bool] {
        var out: [Bool] = []
        for y in rect.y..<rect.maxY { for x in rect.x..<rect.maxX { out.append(fb[x, y]) } }
        return out
    }

    /// With no live data the fields show "--" and the timer is drawn exactly as with data.
    @Test func timerShowsWithoutAnyMetric() {
        var ride = ScreenCatalogue.riding()
        var empty = ride
        for i in 0..<empty.metrics.count { empty.metrics[i] = nil }
        for page in 0..<3 {
            ride.mode = .running(page: page)
            empty.mode = .running(page: page)
            let a = render(ride), b = render(empty)
            let layout = ScreenLayouts.standard128x64.runningPages[page]
            let timer = layout.fields.first { $0.content == .timer }!
            #expect(region(a, timer.frame) == region(b, timer.frame), "page \(page + 1): timer unchanged")
            #expect(region(a, timer.frame).contains(true))
            for f in layout.fields {
                guard case .metric = f.content else { continue }
                #expect(region(a, f.frame) != region(b, f.frame), "page \(page + 1) \(f.content): data vs no data")
            }
        }
    }

    /// A "--" field is drawn the same whatever stale value the metric had before.
    @Test func noStaleValueSurvives() {
        var model = ScreenCatalogue.riding()
        model[.speed] = 12
        var r = ScreenRenderer()
        var fb = Framebuffer.oled128x64()
        r.render(model, into: &fb)
        model[.speed] = nil
        r.render(model, into: &fb)
        var fresh = ScreenCatalogue.riding()
        fresh[.speed] = nil
        #expect(fb.bytes == render(fresh).bytes)
    }

    /// Layout is data: a page built here, with a field the standard pages lack, draws it.
    @Test func addingAFieldNeedsNoDrawingCode() {
        let page = PageLayout(name: "TEST", fields: [
            Field(.metric(.normalizedPower), Rect(x: 0, y: 0, width: 128, height: 32), size: .large),
            Field(.elapsed, Rect(x: 0, y: 32, width: 128, height: 32), size: .huge, label: .none),
        ])
        var model = ScreenCatalogue.riding()
        model.mode = .running(page: 0)
        model[.normalizedPower] = nil
        let layouts = ScreenLayouts(width: 128, height: 64, runningPages: [page])
        var r = ScreenRenderer(layouts: layouts)
        var fb = Framebuffer.oled128x64()
        r.render(model, into: &fb)
        let withoutNP = fb
        model[.normalizedPower] = 231
        r.render(model, into: &fb)
        #expect(fb.bytes != withoutNP.bytes)
        #expect(region(fb, Rect(x: 0, y: 0, width: 128, height: 32)).contains(true))
        #expect(region(fb, Rect(x: 0, y: 32, width: 128, height: 32)).contains(true))
    }

    @Test func tooWideValuesStepDownAFontSize() {
        // 10:00:00 does not fit the huge font in 124 px: drawn in the large font instead.
        var model = ScreenCatalogue.riding()
        model.timerMs = 36_000_000
        let fb = render(model)
        var lit = 0
        for y in 0..<28 { for x in 0..<128 where fb[x, y] { lit += 1 } }
        #expect(lit > 0)
        let rows = (0..<28).filter { y in (0..<124).contains { fb[$0, y] } }
        #expect(rows.count <= Font.digitsLarge.height)
    }

    @Test func pausedShowsPausedAndBothClocks() {
        var m = ScreenCatalogue.riding()
        m.mode = .paused
        let a = render(m)
        m.elapsedMs += 5_000
        let b = render(m)
        #expect(a.bytes != b.bytes, "elapsed keeps counting on screen")
        // The banner is inverted: the top rows are mostly lit.
        var lit = 0
        for x in 0..<128 where a[x, 0] { lit += 1 }
        #expect(lit == 128)
    }

    @Test func renderingAllocatesNoGrowth() {
        // Same renderer, many frames: its text buffer never grows past its capacity.
        var t = TextBuffer()
        for _ in 0..<100 { t.append("0123456789") }
        #expect(t.count == TextBuffer.capacityMax)
    }
}
