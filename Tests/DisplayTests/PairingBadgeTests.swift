import AppCore
import Display
import Screens
import Testing

/// A companion's pairing code never hides a ride (issue 27): over the running screen it is a
/// badge in the top right corner and every other pixel is the ride's; on the idle screen it
/// fills the screen as before.
struct PairingBadgeTests {
    static func render(_ model: ScreenModel) -> Framebuffer {
        var renderer = ScreenRenderer()
        var fb = Framebuffer.oled128x64()
        renderer.render(model, into: &fb)
        return fb
    }

    static func differing(_ a: Framebuffer, _ b: Framebuffer) -> [(Int, Int)] {
        var out: [(Int, Int)] = []
        for y in 0..<64 { for x in 0..<128 where a[x, y] != b[x, y] { out.append((x, y)) } }
        return out
    }

    @Test func overARideOnlyTheCornerBadgeDiffers() {
        let ride = ScreenCatalogue.riding()
        var withCode = ride
        withCode.pairingCode = 482_913
        let changed = Self.differing(Self.render(ride), Self.render(withCode))
        #expect(!changed.isEmpty, "the badge is drawn")
        let badge = Rect(x: 128 - (Font.small.widthPx(count: 7) + 4), y: 0, width: Font.small.widthPx(count: 7) + 4, height: Font.small.height + 2)
        #expect(changed.allSatisfy { $0.0 >= badge.x && $0.0 < badge.maxX && $0.1 >= badge.y && $0.1 < badge.maxY }, "pixels outside the badge changed: \(changed.prefix(8))")
        #expect(badge.width * badge.height <= 128 * 64 / 8, "a badge, not a takeover")
    }

    @Test func onTheIdleScreenTheCodeFillsIt() {
        var idle = ScreenModel()
        let plain = Self.render(idle)
        idle.pairingCode = 482_913
        #expect(Self.differing(plain, Self.render(idle)).count > 128 * 64 / 8)
    }
}
