import Display
import Testing

@Suite struct FramebufferTests {
    @Test func pixelsLiveInControllerPageLayout() {
        var fb = Framebuffer.oled128x64()
        _ = fb.takeDirtyPages()
        fb.setPixel(x: 5, y: 9)      // page 1, bit 1
        fb.setPixel(x: 127, y: 63)   // page 7, bit 7
        fb.setPixel(x: 0, y: 0)      // page 0, bit 0
        #expect(fb.columnByte(page: 1, x: 5) == 0x02)
        #expect(fb.columnByte(page: 7, x: 127) == 0x80)
        #expect(fb.columnByte(page: 0, x: 0) == 0x01)
        #expect(fb.bytes.count == 8 * 128)
        #expect(fb.takeDirtyPages() == 0b1000_0011)
        #expect(fb.takeDirtyPages() == 0)
        fb.setPixel(x: 200, y: 3)    // clipped
        fb.setPixel(x: -1, y: 3)
        #expect(fb.takeDirtyPages() == 0)
    }

    @Test func smallPanelHasFourPages() {
        var fb = Framebuffer.oled128x32()
        #expect(fb.pageCount == 4 && fb.bytes.count == 512)
        #expect(fb.takeDirtyPages() == 0x0F)
        fb.fill(Rect(x: 0, y: 30, width: 10, height: 10))
        #expect(fb.takeDirtyPages() == 0x08)
        #expect(fb[3, 31] && !fb[3, 29])
    }

    @Test func rewritingTheSameValueDirtiesNothing() {
        var fb = Framebuffer.oled128x64()
        fb.fill(Rect(x: 10, y: 10, width: 20, height: 4))
        _ = fb.takeDirtyPages()
        fb.fill(Rect(x: 10, y: 10, width: 20, height: 4))
        #expect(fb.takeDirtyPages() == 0)
        var copy = fb
        copy.setPixel(x: 100, y: 40)
        fb.update(from: copy)
        #expect(fb.takeDirtyPages() == 1 << 5)
        #expect(fb == copy || fb.bytes == copy.bytes)
    }

    /// fill, invert and strokeRect against a pixel-by-pixel model, over seeded random rectangles.
    @Test func rectangleOperationsMatchAPixelModel() {
        var seed: UInt64 = 0x5EED_0001
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        var fb = Framebuffer.oled128x64()
        var model = Array(repeating: false, count: 128 * 64)
        for round in 0..<300 {
            let r = Rect(x: next(140) - 6, y: next(76) - 6, width: next(40), height: next(30))
            let op = next(3)
            let y0 = min(64, max(0, r.y)), y1 = max(y0, min(64, r.maxY))
            let x0 = min(128, max(0, r.x)), x1 = max(x0, min(128, r.maxX))
            for y in y0..<y1 {
                for x in x0..<x1 {
                    let onEdge = x == r.x || x == r.maxX - 1 || y == r.y || y == r.maxY - 1
                    switch op {
                    case 0: model[y * 128 + x] = true
                    case 1: model[y * 128 + x].toggle()
                    default: if onEdge { model[y * 128 + x] = false }
                    }
                }
            }
            switch op {
            case 0: fb.fill(r)
            case 1: fb.invert(r)
            default: fb.strokeRect(r, on: false)
            }
            for y in 0..<64 {
                for x in 0..<128 where fb[x, y] != model[y * 128 + x] {
                    Issue.record("seed 0x5EED0001 round \(round) op \(op) \(r): pixel (\(x),\(y)) differs")
                    return
                }
            }
        }
    }

    @Test func linesIncludeBothEnds() {
        var fb = Framebuffer.oled128x64()
        fb.line(x0: 3, y0: 60, x1: 40, y1: 2)
        #expect(fb[3, 60] && fb[40, 2])
        var count = 0
        for y in 0..<64 { for x in 0..<128 where fb[x, y] { count += 1 } }
        #expect(count == 59)  // one pixel per row along the longer axis
    }

    @Test func barChartScalesToTheLargestValue() {
        var fb = Framebuffer.oled128x64()
        fb.barChart(Rect(x: 0, y: 0, width: 30, height: 21), values: [0, 10, 20, 5, 99], count: 3, gapPx: 0)
        // 3 bars of 10 px; heights 0, 10, 20 above a baseline at y = 20.
        func height(_ x: Int) -> Int { (0..<20).filter { fb[x, $0] }.count }
        #expect(height(5) == 0 && height(15) == 10 && height(25) == 20)
        #expect(fb[5, 20] && fb[15, 20])
        #expect(!fb[35, 20], "only `count` bars")
    }

    @Test func textUsesFontCells() {
        var fb = Framebuffer.oled128x64()
        let w = fb.drawText("12", font: .digitsHuge, x: 0, y: 0)
        #expect(w == 32)
        #expect(Font.digitsHuge.height >= 24, "large digits must be at least 24 px tall")
        // The digits ink at least 24 rows.
        let rows = (0..<64).filter { y in (0..<32).contains { fb[$0, y] } }
        #expect(rows.count >= 24)
        for c in UInt8(0x20)...UInt8(0x7E) {
            #expect(Font.small.contains(c) && Font.medium.contains(c))
        }
        for f in [Font.digitsMedium, .digitsLarge, .digitsHuge] {
            #expect(f.covers("0123456789:.- ".utf8))
            #expect(!f.contains(UInt8(ascii: "A")))
        }
        #expect(Font.small.height == 12 && Font.medium.height == 16)
    }
}
