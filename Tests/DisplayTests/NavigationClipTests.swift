import AppCore
import Display
@testable import Screens
import Testing

/// The course on the map stays in the map's area, and the navigation pages make room for the
/// pairing code's status line as the data pages do.
struct NavigationClipTests {
    static let sizes = [(128, 32), (128, 64), (128, 128), (400, 240)]

    @Test func clipSegmentKeepsWhatIsInsideAndCutsAtTheEdges() {
        let box = (minX: 0.0, minY: 0.0, maxX: 10.0, maxY: 10.0)
        func clip(_ a: Double, _ b: Double, _ c: Double, _ d: Double) -> (x0: Double, y0: Double, x1: Double, y1: Double)? {
            ScreenRenderer.clipSegment(a, b, c, d, minX: box.minX, minY: box.minY, maxX: box.maxX, maxY: box.maxY)
        }
        let inside = clip(1, 2, 8, 9)
        #expect(inside.map { [$0.x0, $0.y0, $0.x1, $0.y1] } == [1, 2, 8, 9])
        // Across the right edge: cut at x = 10, on the line y = x / 2.
        let right = clip(4, 2, 20, 10)
        #expect(right.map { [$0.x0, $0.y0, $0.x1, $0.y1] } == [4, 2, 10, 5])
        // Through the box from outside on both sides.
        let through = clip(-5, 5, 15, 5)
        #expect(through.map { [$0.x0, $0.y0, $0.x1, $0.y1] } == [0, 5, 10, 5])
        // Wholly outside, and past a corner without touching the box.
        #expect(clip(-5, -5, -1, 20) == nil)
        #expect(clip(8, -5, 15, 3) == nil)
        // Random segments: the clipped part lies in the box.
        var state: UInt64 = 0x5EED_C11F
        for _ in 0..<2_000 {
            var v = [Double]()
            for _ in 0..<4 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                v.append(Double(Int64(state >> 33) % 4_000) / 100 - 15)
            }
            if let c = clip(v[0], v[1], v[2], v[3]) {
                for (x, y) in [(c.x0, c.y0), (c.x1, c.y1)] {
                    #expect(x >= box.minX && x <= box.maxX && y >= box.minY && y <= box.maxY, "\(v) clipped to \(c)")
                }
            }
        }
    }

    /// Every navigation screen of the catalogue, with a pairing code, at every size: the page is
    /// laid out above the status line (no frame reaches into it), the code is written there, and
    /// nothing is drawn outside the panel.
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func navigationPagesMakeRoomForTheStatusLine(_ size: String) {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        let line = layouts.geometry.statusLine
        #expect(layouts.navigationStatusLinePages.count == layouts.navigationPages.count)
        for page in layouts.navigationStatusLinePages {
            for frame in page.fields.map(\.frame) + page.graphics.map(\.frame) {
                let o = frame.intersection(line)
                #expect(o.width == 0 || o.height == 0, "\(size) \(page.name): \(frame) reaches into the status line \(line)")
            }
        }
        let entries = ScreenCatalogue.entries().filter { $0.name.hasPrefix("nav-") && $0.width == 128 && $0.height == 64 }
        #expect(!entries.isEmpty)
        for entry in entries {
            var model = entry.model
            guard case .running = model.mode, model.overlay == nil else { continue }
            model.pairingCode = 482_913
            var r = ScreenRenderer(layouts: layouts)
            var fb = Framebuffer(width: wh[0], height: wh[1])
            r.render(model, into: &fb)
            #expect(r.canvas.inkOutside == 0, "\(size) \(entry.name) draws outside the panel")
            var lineInk = 0
            for y in line.y..<line.maxY { for x in line.x..<line.maxX where !fb[x, y] { lineInk += 1 } }
            #expect(lineInk > 0, "\(size) \(entry.name): the code is written in the status line")
        }
    }
}
