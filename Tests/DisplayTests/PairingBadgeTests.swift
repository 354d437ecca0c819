import AppCore
import Display
@testable import Screens
import Testing

/// A companion's pairing code never hides a ride (issue 27): over a running page it is the
/// status line at the foot, and the page is laid out above it with every figure whole, at every
/// panel size; on the idle screen it fills the screen as before.
struct PairingBadgeTests {
    static let sizes = [(128, 32), (128, 64), (128, 128), (400, 240)]

    /// Every running page at every size, with the code: each field's value and caption (drawn
    /// alone) are on screen pixel for pixel, no field reaches into the status line, and the
    /// status line carries the code. (The corner badge this replaced inverted the timer's
    /// seconds on page 1 at 128x64 and 128x32.)
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func onARunningPageNoFigureIsHidden(_ size: String) {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        let line = layouts.geometry.statusLine
        #expect(layouts.statusLinePages.count == layouts.runningPages.count)
        for (index, page) in layouts.statusLinePages.enumerated() {
            var model = ScreenCatalogue.riding()
            model.mode = .running(page: index)
            model.runningPageCount = layouts.runningPages.count
            model.pairingCode = 482_913
            var screen = ScreenRenderer(layouts: layouts)
            var fb = Framebuffer(width: wh[0], height: wh[1])
            screen.render(model, into: &fb)
            var lineInk = 0
            for y in line.y..<line.maxY { for x in line.x..<line.maxX where !fb[x, y] { lineInk += 1 } }
            #expect(lineInk > 0, "\(size) \(page.name): the code is written in the status line")
            var alone = ScreenRenderer(layouts: layouts)
            var text = TextBuffer()
            for field in page.fields {
                let o = field.frame.intersection(line)
                #expect(o.width == 0 || o.height == 0, "\(size) \(page.name) \(field.content): \(field.frame) reaches into the status line \(line)")
                ValueFormat.write(field.content, of: model, into: &text)
                let image = alone.drawFieldAlone(field, value: Array(text))
                var hidden = 0
                for y in 0..<image.height { for x in 0..<image.width where image[x, y] && !fb[x, y] { hidden += 1 } }
                #expect(hidden == 0, "\(size) \(page.name) \(field.content): \(hidden) pixels of its figure hidden")
                let s = alone.valueSetting(field, count: text.count)
                #expect(s.fits, "\(size) \(page.name) \(field.content) clipped beside the status line")
            }
        }
    }

    /// Paused, at every size: the code takes the banner's word (PAUSED); every pixel under
    /// the banner (the frozen timer, the elapsed time) is as without it. (The corner badge
    /// hid the top of the timer's digits: 107 pixels at 128x64, 245 at 400x240.)
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func pausedTheCodeIsInTheBanner(_ size: String) {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        var model = ScreenCatalogue.riding()
        model.mode = .paused
        var r = ScreenRenderer(layouts: layouts)
        var plain = Framebuffer(width: wh[0], height: wh[1])
        var shown = plain
        r.render(model, into: &plain)
        model.pairingCode = 482_913
        r.render(model, into: &shown)
        let banner = layouts.geometry.fonts.title.height
        var below = 0, inBanner = 0
        for y in 0..<wh[1] { for x in 0..<wh[0] where plain[x, y] != shown[x, y] { if y < banner { inBanner += 1 } else { below += 1 } } }
        #expect(inBanner > 0, "\(size): the code is in the banner")
        #expect(below == 0, "\(size): \(below) pixels of the paused screen changed")
        // On a short panel the timer at the banner's right stays whole: its ink is unchanged.
        var timerChanged = 0
        for y in 0..<banner { for x in (wh[0] * 2 / 3)..<wh[0] where plain[x, y] != shown[x, y] { timerChanged += 1 } }
        #expect(layouts.geometry.isTall || timerChanged == 0, "\(size): the banner's timer changed")
    }

    @Test func onTheIdleScreenTheCodeFillsIt() {
        var idle = ScreenModel()
        var r = ScreenRenderer()
        var plain = Framebuffer.oled128x64(), shown = Framebuffer.oled128x64()
        r.render(idle, into: &plain)
        idle.pairingCode = 482_913
        r.render(idle, into: &shown)
        var differing = 0
        for y in 0..<64 { for x in 0..<128 where plain[x, y] != shown[x, y] { differing += 1 } }
        #expect(differing > 128 * 64 / 8)
    }
}
