import AppCore
import Display
import RideModel
import Screens
import Testing

/// The renderer skips drawing a running page whose texts did not change (most sensor frames).
/// Whatever the sequence of screen values, its output must equal a fresh renderer's.
struct RendererSkipTests {
    typealias Rng = SplitMix64

    /// What a renderer that never drew before makes of `model`: the reference every skip must equal.
    static func freshImage(_ model: ScreenModel, height: Int) -> Framebuffer {
        var fresh = ScreenRenderer(layouts: .standard(height: height))
        var image = Framebuffer(width: 128, height: height)
        fresh.render(model, into: &image)
        return image
    }

    @Test(arguments: [64, 32])
    func sameOutputAsAFreshRenderer(height: Int) {
        let seed = UInt64(0xB1CE + height)
        var rng = Rng(seed: seed)
        var kept = ScreenRenderer(layouts: .standard(height: height))
        var keptImage = Framebuffer(width: 128, height: height)
        var panel = EmulatedPanel(panel: PanelConfiguration(height: height))
        var model = ScreenCatalogue.riding()
        var skipped = 0
        for step in 0..<3_000 {
            // Mostly small changes that often leave the page's texts as they were.
            switch rng.below(12) {
            case 0: model[.power] = Double(150 + rng.below(200))
            case 1: model[.speed] = (model[.speed] ?? 8) + Double(rng.below(3)) * 0.001
            case 2: model[.heartRate] = Double(120 + rng.below(60))
            case 3: model[.cadence] = Double(80 + rng.below(20))
            case 4: model.timerMs += 1000; model.elapsedMs += 1000; model.lapTimerMs += 1000
            case 5: model[.distance] = (model[.distance] ?? 0) + Double(rng.below(20))
            case 6: model.mode = .running(page: rng.below(4))
            case 7: model.overlay = rng.below(3) == 0 ? .sensorLost(.power) : nil
            case 8: model.mode = rng.below(6) == 0 ? .paused : .running(page: 0)
            case 9: model[.speed] = rng.below(8) == 0 ? nil : 30 / 3.6
            // The radar column: its state and vehicles moving a little or a lot.
            case 10: model.sensors[Int(SensorRole.radar.rawValue)] = [.connected, .connected, .lost, .notConfigured, .searching][rng.below(5)]
            case 11:
                var p = RadarPicture()
                for _ in 0..<rng.below(4) {
                    p.insert(RadarTarget(rangeM: Double(rng.below(1500)) / 10, threat: rng.below(4) == 0 ? .fastApproach : .approaching))
                }
                model.radar = p
            default: break
            }
            let before = keptImage.bytes
            kept.render(model, into: &keptImage)
            if keptImage.bytes == before { skipped += 1 }
            let freshImage = Self.freshImage(model, height: height)
            // The pipeline skips even the framebuffer copy when nothing was drawn; what reaches
            // the panel through the driver must still be the fresh image.
            let shown = panel.show(model)
            #expect(keptImage.bytes == freshImage.bytes, "seed \(seed) step \(step): \(model.mode)")
            #expect(shown.bytes == freshImage.bytes, "panel, seed \(seed) step \(step): \(model.mode)")
            if keptImage.bytes != freshImage.bytes || shown.bytes != freshImage.bytes { return }
        }
        #expect(skipped > 300, "the sequence should often leave the screen as it was (seed \(seed))")
    }

    /// After a ride the summary stays on screen while sensor frames keep changing the live
    /// values it does not show: the page is drawn once, not once a frame, and whatever the
    /// sequence (pages, an overlay, a pairing code, the summary itself changing) the output equals
    /// a fresh renderer's.
    @Test(arguments: [64, 32])
    func theSummaryIsDrawnOnlyWhenWhatItShowsChanges(height: Int) {
        let seed = UInt64(0x5A3E + height)
        var rng = Rng(seed: seed)
        var kept = ScreenRenderer(layouts: .standard(height: height))
        var keptImage = Framebuffer(width: 128, height: height)
        var model = ScreenCatalogue.riding()
        model.mode = .summary(page: 0)
        model.summary = ScreenCatalogue.summary()
        var drawn = 0, frames = 0
        for step in 0..<2_000 {
            switch rng.below(14) {
            case 0...5: // a sensor frame: live values the summary does not show
                model[.power] = Double(150 + rng.below(200))
                model[.heartRate] = Double(120 + rng.below(60))
                frames += 1
            case 6: model.mode = .summary(page: rng.below(6))
            case 7: model.overlay = rng.below(3) == 0 ? .sensorLost(.power) : nil
            case 8: model.pairingCode = rng.below(4) == 0 ? UInt32(rng.below(999_999)) : nil
            case 9: model.summary?.saved = rng.below(2) == 0
            case 10: model.summary?.lapCount = rng.below(5)
            case 11: model.mode = rng.below(3) == 0 ? .running(page: 0) : .summary(page: rng.below(3))
            case 12: model.mode = rng.below(4) == 0 ? .idle : .summary(page: 1)
            default: model.summary = rng.below(5) == 0 ? nil : ScreenCatalogue.summary()
            }
            var scratch = keptImage
            if kept.renderChanges(model, into: &scratch) {
                drawn += 1
            } else {
                #expect(scratch.bytes == keptImage.bytes, "nothing drawn: the framebuffer is left alone")
            }
            keptImage = scratch
            let freshImage = Self.freshImage(model, height: height)
            #expect(keptImage.bytes == freshImage.bytes, "seed \(seed) step \(step): \(model.mode)")
            if keptImage.bytes != freshImage.bytes { return }
        }
        #expect(frames > 700 && drawn < 2_000 - frames / 2, "sensor frames on the summary should mostly draw nothing (drawn \(drawn) of 2000, \(frames) frames)")
    }
}

extension SplitMix64 {
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
