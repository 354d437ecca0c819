import AppCore
import Display
import RideModel
@testable import Screens
import Testing

/// The rear radar's column (issue 29) on the navigation pages (issue 28): while a radar is
/// paired, the NAV and PROFILE pages show the same column as the data pages, on every panel, and
/// the page is laid out beside it (the cue, its distance and name, the distance to go whole).
struct RadarNavigationTests {
    static let sizes = [(128, 64), (128, 32), (400, 240), (128, 128)]

    /// The catalogue's navigation-page moments (cue, NOW with the next, water stop, off course,
    /// wrong way, to the course, no fix, finished, profile on and before a climb).
    static func navigationMoments() -> [(String, ScreenModel)] {
        ScreenCatalogue.entries().filter { $0.width == 128 && $0.height == 64 && $0.model.overlay == nil }.compactMap { e in
            guard e.model.navigation.course != nil, case .running(let page) = e.model.mode,
                  page >= e.model.runningPageCount - NavigationPages.count else { return nil }
            return (e.name, e.model)
        }
    }

    static let radarStates: [(String, SensorState, RadarPicture)] = [
        ("vehicles", .connected, RadarPicture([RadarTarget(rangeM: 62, closingSpeedMps: 8, threat: .approaching),
                                               RadarTarget(rangeM: 28, closingSpeedMps: 14, threat: .fastApproach)])),
        ("clear", .connected, RadarPicture()),
        ("lost", .lost, RadarPicture()),
    ]

    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func theColumnIsOnTheNavigationPagesBesideThePage(_ size: String) throws {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        let g = layouts.geometry
        let moments = Self.navigationMoments()
        #expect(moments.count >= 10)
        var failures: [String] = []
        for (name, base) in moments {
            for (radarName, state, picture) in Self.radarStates {
                for code in [nil, 482_913 as UInt32?] {
                    var m = base
                    m.sensors[Int(SensorRole.radar.rawValue)] = state
                    m.radar = picture
                    m.pairingCode = code
                    let what = "\(size) \(name) radar \(radarName)\(code == nil ? "" : " with a code")"
                    var r = ScreenRenderer(layouts: layouts)
                    guard case .running(let page) = m.mode, let nav = r.navigationPageIndex(page, m) else {
                        failures.append("\(what): not a navigation page"); continue
                    }
                    let column = r.radarColumn(m)
                    // The column and its rule.
                    let strip = Rect(x: 0, y: 0, width: column.maxX + g.px(1), height: column.maxY)
                    var shown = Framebuffer(width: wh[0], height: wh[1])
                    r.render(m, into: &shown)
                    // The page alone, as laid out for the moment.
                    let layout = layouts.navigationPages(radar: true, statusLine: code != nil)[nav]
                    for graphic in layout.graphics where graphic.frame.x <= strip.maxX {
                        failures.append("\(what): \(graphic.kind) at \(graphic.frame) under the column")
                    }
                    r.canvas.clear()
                    r.drawPage(layout, m)
                    let alone = r.canvas
                    for box in InkBlobs.boxes(alone) where InkBlobs.overlaps(box, strip) {
                        failures.append("\(what): the page's element at \(box) under the column \(strip)"); break
                    }
                    var hidden = 0
                    for y in 0..<wh[1] { for x in 0..<wh[0] where alone[x, y] && !shown[x, y] { hidden += 1 } }
                    if hidden > 0 { failures.append("\(what): \(hidden) pixels of the page hidden") }
                    // The column as on a data page with the same radar.
                    var data = m
                    data.mode = .running(page: 0)
                    var d = ScreenRenderer(layouts: layouts)
                    var dataShown = Framebuffer(width: wh[0], height: wh[1])
                    d.render(data, into: &dataShown)
                    var differing = 0
                    for y in strip.y..<strip.maxY { for x in strip.x..<strip.maxX where shown[x, y] != dataShown[x, y] { differing += 1 } }
                    if differing > 0 { failures.append("\(what): the column differs from the data pages' in \(differing) pixels") }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count):\n\(failures.prefix(30).joined(separator: "\n"))")
    }

    /// The row along the NAV page's foot, beside the column: the distance to go and the time to
    /// go never run into each other (at 128x64 beside the column "TO GO 15.7 KM" ran into
    /// "33 MIN").
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func theDistanceAndTimeToGoStayApart(_ size: String) throws {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        let g = layouts.geometry
        var checked = 0
        for (name, base) in Self.navigationMoments() {
            for radar in [false, true] {
                var m = base
                if radar { m.sensors[Int(SensorRole.radar.rawValue)] = .connected }
                var r = ScreenRenderer(layouts: layouts)
                guard case .running(let page) = m.mode, let nav = r.navigationPageIndex(page, m) else { continue }
                let layout = layouts.navigationPages(radar: radar, statusLine: false)[nav]
                for graphic in layout.graphics where graphic.kind == .navigation {
                    guard let bottom = NavigationLayout(graphic.frame, g).bottom else { continue }
                    for secondsToGo in [1_980.0, 7_500] {
                        m.navigation.secondsToGo = secondsToGo
                        r.canvas.clear()
                        r.drawPage(layout, m)
                        let both = r.canvas
                        // The time alone, right-aligned in the row as the page sets it.
                        var timeAlone = Framebuffer(width: wh[0], height: wh[1])
                        let written = r.writeTimeToGo(secondsToGo)
                        #expect(written)
                        timeAlone.drawText(r.text, font: g.fonts.text, in: bottom, alignment: .right)
                        var timeLeft = Int.max, timeWhole = true, rowInk = 0
                        for y in bottom.y..<bottom.maxY {
                            for x in bottom.x..<bottom.maxX {
                                if both[x, y] { rowInk += 1 }
                                if timeAlone[x, y] { timeLeft = min(timeLeft, x); if !both[x, y] { timeWhole = false } }
                            }
                        }
                        #expect(rowInk > 0, "\(size) \(name) radar \(radar): the distance to go is written")
                        guard timeWhole, timeLeft < Int.max else { checked += 1; continue }
                        // Only the time's ink from 2 px left of it to the row's end.
                        var intruding = 0
                        for y in bottom.y..<bottom.maxY {
                            for x in max(bottom.x, timeLeft - g.px(2))..<bottom.maxX where both[x, y] && !timeAlone[x, y] { intruding += 1 }
                        }
                        #expect(intruding == 0, "\(size) \(name) radar \(radar) \(secondsToGo) s: \(intruding) pixels of the distance run into the time")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 0 || !layouts.geometry.isTall)
    }

    /// A vehicle coming up while the NAV page shows redraws the column (the unchanged-page
    /// shortcut keys on the radar there too).
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func aVehicleRedrawsTheNavigationPage(_ size: String) throws {
        let wh = size.split(separator: "x").map { Int($0)! }
        let layouts = ScreenLayouts.standard(width: wh[0], height: wh[1])
        var m = try #require(Self.navigationMoments().first { $0.0 == "nav-cue" }).1
        m.sensors[Int(SensorRole.radar.rawValue)] = .connected
        m.radar = RadarPicture()
        var r = ScreenRenderer(layouts: layouts)
        var fb = Framebuffer(width: wh[0], height: wh[1])
        r.render(m, into: &fb)
        #expect(!r.renderChanges(m, into: &fb), "nothing changed: nothing drawn")
        let before = fb
        m.radar = RadarPicture([RadarTarget(rangeM: 40, closingSpeedMps: 9, threat: .approaching)])
        #expect(r.renderChanges(m, into: &fb))
        #expect(fb != before)
        var fresh = ScreenRenderer(layouts: layouts)
        var expected = Framebuffer(width: wh[0], height: wh[1])
        fresh.render(m, into: &expected)
        #expect(fb == expected)
    }
}
