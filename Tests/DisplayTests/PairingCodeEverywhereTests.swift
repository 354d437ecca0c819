import AppCore
import Display
@testable import Screens
import Testing

/// A companion's pairing code when the unit is not idle (issue 27: "only when idle or as a
/// small dismissable badge") covers nothing: on every screen of the catalogue (countdown,
/// running pages with and without radar and course, the summary pages, the discard
/// confirmation, Sensors, Courses, alerts over a page) at every panel size, the code is a status
/// line at the foot and the screen is laid out above it. (The corner badge this replaced sat on
/// the summary's SAVED n/N, the Sensors search's seconds, the discard banner's words and the
/// countdown's title on 128x64, 128x32 and 400x240.)
struct PairingCodeEverywhereTests {
    static let code: UInt32 = 482_913

    /// The catalogue's screens where the code is a status line: not the idle screen (it fills
    /// it), not paused (it is in the banner: PairingBadgeTests), not powering off (nothing but
    /// that screen).
    static func screens() -> [ScreenCatalogue.Entry] {
        ScreenCatalogue.entries().filter { e in
            if e.model.poweringOff != nil { return false }
            switch e.model.mode {
            case .idle, .paused: return false
            default: return true
            }
        }
    }

    @Test func everyScreenAndPanelLeavesTheCodesLineToIt() throws {
        var failures: [String] = []
        var checked = 0
        var entries = Self.screens()
        // And on the 128x128 memory LCD.
        entries += entries.filter { $0.width == 128 && $0.height == 64 }.map {
            ScreenCatalogue.Entry(name: "square-" + $0.name, caption: $0.caption, width: 128, height: 128, model: $0.model)
        }
        #expect(entries.count > 200)
        for e in entries {
            var m = e.model
            m.pairingCode = Self.code
            let layouts = ScreenLayouts.standard(width: e.width, height: e.height)
            var r = ScreenRenderer(layouts: layouts)
            let line = try #require(r.pairingCodeFrame(m), "\(e.name): the code has a line")
            #expect(line.x >= 0 && line.y >= 0 && line.maxX <= e.width && line.maxY <= e.height)
            // The screen as laid out with the code, without the code.
            r.canvas.clear()
            r.drawBelowPairingCode(m)
            let under = r.canvas
            var shown = Framebuffer(width: e.width, height: e.height)
            r.render(m, into: &shown)
            checked += 1
            // The code is written there (inverted: lit and dark pixels in the line).
            var lit = 0, dark = 0
            for y in line.y..<line.maxY { for x in line.x..<line.maxX { if shown[x, y] { lit += 1 } else { dark += 1 } } }
            if lit == 0 || dark == 0 { failures.append("\(e.name): no code in \(line)") }
            // It changes nothing else.
            var elsewhere = 0
            for y in 0..<e.height {
                for x in 0..<e.width where shown[x, y] != under[x, y] && !line.contains(x: x, y: y) { elsewhere += 1 }
            }
            if elsewhere > 0 { failures.append("\(e.name): \(elsewhere) pixels outside the code's line changed") }
            // No element of the screen reaches into it.
            for box in InkBlobs.boxes(under) where InkBlobs.overlaps(box, line) {
                failures.append("\(e.name): an element at \(box) is under the code's line \(line)")
                break
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(checked) screens:\n\(failures.prefix(40).joined(separator: "\n"))")
    }

    /// Summary pages keep every row above the code on every panel that showed them without it.
    @Test(arguments: [(128, 64), (400, 240), (128, 128)])
    func theSummaryKeepsItsRows(width: Int, height: Int) throws {
        var m = ScreenModel()
        m.summary = ScreenCatalogue.summary()
        let layouts = ScreenLayouts.standard(width: width, height: height)
        for page in 0..<2 {
            m.mode = .summary(page: page)
            m.pairingCode = nil
            var r = ScreenRenderer(layouts: layouts)
            var plain = Framebuffer(width: width, height: height)
            r.render(m, into: &plain)
            m.pairingCode = Self.code
            r.canvas.clear()
            r.drawBelowPairingCode(m)
            // Every row whole: the same ink, only closer together.
            #expect(InkBlobs.ink(r.canvas) == InkBlobs.ink(plain), "\(width)x\(height) page \(page + 1)")
        }
    }
}
