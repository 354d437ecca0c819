import AppCore
import Display
@testable import Screens
import Testing

/// A page is described once (`PageDesign`) and laid out from the panel's size.
struct PageDesignTests {
    static let sizes = [(128, 32), (128, 64), (128, 128), (400, 240)]

    /// On every supported panel the standard pages' fields, rules and graphics lie inside the
    /// running area, and no two fields (or a field and a graphic) share a pixel.
    @Test func standardPagesFitEveryPanelWithoutOverlap() {
        for (w, h) in Self.sizes {
            let layouts = ScreenLayouts(width: w, height: h)
            let area = layouts.geometry.runningArea
            for page in layouts.runningPages {
                var frames = page.fields.map(\.frame) + page.graphics.map(\.frame)
                for r in frames + page.rules {
                    #expect(r.width > 0 && r.height > 0 && r.intersection(area) == r, "\(w)x\(h) \(page.name): \(r) outside \(area)")
                }
                while let f = frames.popLast() {
                    for o in frames { #expect(f.intersection(o).width == 0 || f.intersection(o).height == 0, "\(w)x\(h) \(page.name): \(f) overlaps \(o)") }
                }
                #expect(!page.fields.isEmpty || !page.graphics.isEmpty, "\(w)x\(h) \(page.name) is empty")
            }
        }
    }

    /// Rows and cells appear on the size classes they name; fill rows share the height.
    @Test func rowsAndCellsFollowTheirSizeClasses() {
        let design = PageDesign("T", [
            .fit(pad: 2, [.init(.timer, .huge, label: .none)]),
            .fill([.init(.metric(.speed), .large), .init(.metric(.cadence), .large, in: .large)]),
            .fill([.init(.metric(.power), .large)], in: .from(.regular)),
        ])
        let compact = design.layout(PanelGeometry(width: 128, height: 32))
        let regular = design.layout(PanelGeometry(width: 128, height: 64))
        let large = design.layout(PanelGeometry(width: 400, height: 240))
        #expect(compact.fields.map(\.content) == [.timer, .metric(.speed)])
        #expect(regular.fields.map(\.content) == [.timer, .metric(.speed), .metric(.power)])
        #expect(large.fields.map(\.content) == [.timer, .metric(.speed), .metric(.cadence), .metric(.power)])
        // Large: the timer row fits the 52-px digits plus 2x the pad; the two fill rows share the rest.
        let timer = large.fields[0].frame
        #expect(timer.height == 52 + 4)
        let speed = large.fields[1].frame, power = large.fields[3].frame
        #expect(abs(speed.height - power.height) <= 1)
        #expect(power.maxY == 240)
        // Two cells split the width with a 2-px rule between them at scale 2.
        let cadence = large.fields[2].frame
        #expect(speed.x == 0 && cadence.maxX == 400 - 4 && cadence.x > speed.maxX)
        #expect(large.rules.contains { $0.width == 2 && $0.x >= speed.maxX && $0.maxX <= cadence.x })
    }

    /// The large panel draws with the large fonts: the timer in 32-px-wide digits.
    @Test func largePanelUsesTheLargeFonts() {
        let g = PanelGeometry(width: 400, height: 240)
        #expect(g.scale == 2 && g.sizeClass == .large)
        #expect(FieldSize.huge.font(in: g.fonts).width == 32 && FieldSize.huge.font(in: g.fonts).height == 52)
        #expect(FieldSize.medium.font(in: g.fonts).width == 16)
        let oled = PanelGeometry(width: 128, height: 64)
        #expect(FieldSize.huge.font(in: oled.fonts).width == 16 && oled.scale == 1)
        #expect(PanelGeometry(width: 128, height: 128).sizeClass == .regular && PanelGeometry(width: 128, height: 128).scale == 1,
                "128 columns hold no more fields side by side")
    }

    /// The magnified fonts are the originals with every pixel doubled.
    @Test func doubledDigitsAreTheOriginalsMagnified() {
        for (small, big) in [(Font.digitsLarge, Font.digitsLarge2x), (.digitsHuge, .digitsHuge2x)] {
            #expect(big.width == 2 * small.width && big.height == 2 * small.height)
            for code in "0123456789:.-".utf8 {
                var a = Framebuffer(width: 64, height: 64), b = Framebuffer(width: 64, height: 64)
                a.drawCharacter(code, font: small, x: 0, y: 0)
                b.drawCharacter(code, font: big, x: 0, y: 0)
                for y in 0..<big.height { for x in 0..<big.width { #expect(b[x, y] == a[x / 2, y / 2], "\(code) at \(x),\(y)") } }
            }
        }
    }
}
