import AppCore
import Display
import Positioning
import RideModel
import Screens
import Testing

/// The climbing and map pages: the renderer's skip of unchanged pages must see a growing track
/// (a map page whose fields did not change still redraws), and the map fits any track.
struct PositionScreenTests {
    @Test(arguments: [64, 32])
    func mapAndClimbPagesEqualAFreshRenderer(height: Int) {
        var rng = SplitMix64(seed: UInt64(0x6A9 + height))
        var kept = ScreenRenderer(layouts: .standard(height: height))
        var keptImage = Framebuffer(width: 128, height: height)
        var model = ScreenCatalogue.riding()
        model.runningPageCount = 5
        model.mode = .running(page: 4)
        var lat = 47.0, lon = 8.0, ms: Int64 = 0
        var redrawnForTrack = 0
        for step in 0..<1_500 {
            switch rng.below(10) {
            case 0...5:
                lat += Double(rng.below(40)) * 1e-5
                lon += Double(Int(rng.below(40)) - 15) * 1e-5
                ms += 1000
                model.track.add(latDeg: lat, lonDeg: lon, atMs: ms)
            case 6: model[.altitude] = Double(200 + rng.below(50))
            case 7: model[.grade] = Double(Int(rng.below(200)) - 100) / 10
            case 8: model.mode = .running(page: 3 + rng.below(2))
            default: model.gps = GpsStatus(mode: rng.below(3) == 0 ? .fix2D : .fix3D, satellitesUsed: rng.below(12))
            }
            let before = keptImage.bytes
            kept.render(model, into: &keptImage)
            if case .running(4) = model.mode, keptImage.bytes != before { redrawnForTrack += 1 }
            var fresh = ScreenRenderer(layouts: .standard(height: height))
            var freshImage = Framebuffer(width: 128, height: height)
            fresh.render(model, into: &freshImage)
            #expect(keptImage.bytes == freshImage.bytes, "step \(step): \(model.mode)")
            if keptImage.bytes != freshImage.bytes { return }
        }
        #expect(redrawnForTrack > 100, "the map redraws as the track grows")
    }

    /// Whatever the track's extent (a few metres to 200 km, any direction), nothing is drawn
    /// outside the map's area, and the start and the rider are both on it.
    @Test func theWholeTrackFitsItsArea() {
        var rng = SplitMix64(seed: 77)
        for trial in 0..<40 {
            var model = ScreenCatalogue.riding()
            model.runningPageCount = 5
            model.mode = .running(page: 4)
            let stepM = [0.5, 5, 50, 500][trial % 4]
            var north = 0.0, east = 0.0
            for k in 0..<400 {
                north += stepM * (Double(rng.below(21)) - 10) / 10
                east += stepM * (Double(rng.below(21)) - 10) / 10
                model.track.add(latDeg: 46 + north / 111_200, lonDeg: 7 + east / 77_000, atMs: Int64(k) * 1000)
            }
            var r = ScreenRenderer(layouts: .standard(height: 64))
            var image = Framebuffer(width: 128, height: 64)
            r.render(model, into: &image)
            // The page dots' column (x 124...127) holds only the dots; the map stays left of it.
            for y in 40..<64 { for x in 123..<128 { #expect(!image[x, y], "trial \(trial): (\(x), \(y))") } }
            var lit = 0
            for y in 0..<64 { for x in 0..<122 where image[x, y] { lit += 1 } }
            #expect(lit > 30, "trial \(trial): the track is drawn")
        }
    }
}
