import AppCore
import Display
import RideModel
import Screens
import Testing

/// The radar column on the running pages: on every page while a radar is paired, a lost radar
/// never drawn like a clear road, vehicles placed by range, fast ones distinct, every panel size.
@Suite struct RadarColumnTests {
    static func lit(_ image: Framebuffer, _ r: Rect) -> Double {
        var n = 0
        for y in r.y..<r.maxY { for x in r.x..<r.maxX where image[x, y] { n += 1 } }
        return Double(n) / Double(r.width * r.height)
    }

    static func render(_ model: ScreenModel, _ layouts: ScreenLayouts) -> Framebuffer {
        var r = ScreenRenderer(layouts: layouts)
        var f = Framebuffer(width: layouts.width, height: layouts.height)
        r.render(model, into: &f)
        return f
    }

    @Test(arguments: [(128, 64), (128, 32), (400, 240), (128, 128)])
    func onEveryPageALostRadarIsNeverAClearRoad(width: Int, height: Int) {
        let layouts = ScreenLayouts.standard(width: width, height: height)
        let column = layouts.radarColumn
        #expect(column.width >= 5 && column.maxX < layouts.width / 4)
        var m = ScreenCatalogue.riding()
        m.runningPageCount = layouts.runningPages.count
        for page in 0..<layouts.runningPages.count {
            m.mode = .running(page: page)
            m.sensors[Int(SensorRole.radar.rawValue)] = .notConfigured
            let none = Self.render(m, layouts)
            m.sensors[Int(SensorRole.radar.rawValue)] = .connected
            m.radar = RadarPicture()
            let clear = Self.render(m, layouts)
            for lostState in [SensorState.lost, .stale, .searching] {
                m.sensors[Int(SensorRole.radar.rawValue)] = lostState
                let lost = Self.render(m, layouts)
                #expect(Self.lit(lost, column) > 0.5 && Self.lit(clear, column) < 0.25,
                        "page \(page) \(width)x\(height) \(lostState): lost \(Self.lit(lost, column)) clear \(Self.lit(clear, column))")
            }
            #expect(clear != none, "page \(page): the column shows with a radar paired")
            // Nothing of the page is drawn under the column (it is laid out beside it).
            for f in layouts.radarRunningPages[page].fields { #expect(f.frame.x > column.maxX, "page \(page): \(f.content) under the column") }
        }
    }

    @Test func vehiclesArePlacedByRangeAndFastOnesStandOut() {
        let layouts = ScreenLayouts.standard128x64
        let column = layouts.radarColumn
        var m = ScreenCatalogue.riding()
        m.sensors[Int(SensorRole.radar.rawValue)] = .connected
        func topRow(_ rangeM: Double, _ threat: RadarThreat) -> (row: Int, lit: Int) {
            m.radar = RadarPicture([RadarTarget(rangeM: rangeM, threat: threat)])
            let image = Self.render(m, layouts)
            m.radar = RadarPicture()
            let empty = Self.render(m, layouts)
            var rows: [Int] = [], lit = 0
            for y in 14..<column.maxY { for x in column.x..<column.maxX where image[x, y] != empty[x, y] { rows.append(y); lit += 1 } }
            return (rows.min() ?? -1, lit)
        }
        let near = topRow(10, .approaching), mid = topRow(70, .approaching), far = topRow(135, .approaching)
        #expect(near.row > mid.row && mid.row > far.row && far.row >= 14, "\(near) \(mid) \(far)")
        #expect(topRow(500, .approaching).row == topRow(RadarPicture.reachM, .approaching).row, "beyond reach: at the top")
        let fast = topRow(70, .fastApproach)
        #expect(fast.row == mid.row && fast.lit > mid.lit, "a fast one is a bigger mark at the same place")
    }

    @Test func theNearestDistanceIsWritten() {
        var m = ScreenCatalogue.riding()
        m.sensors[Int(SensorRole.radar.rawValue)] = .connected
        m.radar = RadarPicture([RadarTarget(rangeM: 47.4), RadarTarget(rangeM: 120)])
        let a = Self.render(m, .standard128x64)
        m.radar = RadarPicture([RadarTarget(rangeM: 46.6), RadarTarget(rangeM: 120)])
        let b = Self.render(m, .standard128x64)
        m.radar = RadarPicture([RadarTarget(rangeM: 48), RadarTarget(rangeM: 120)])
        let c = Self.render(m, .standard128x64)
        let text = Rect(x: 0, y: 0, width: ScreenLayouts.standard128x64.radarColumn.width, height: 12)
        func crop(_ f: Framebuffer) -> [Bool] { (0..<text.height).flatMap { y in (0..<text.width).map { f[$0, y] } } }
        #expect(crop(a) == crop(b) && crop(a) != crop(c), "47 m both times; 48 m differs")
    }
}
