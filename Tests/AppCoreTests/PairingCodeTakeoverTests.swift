@testable import AppCore
import RideModel
import Testing

/// Nothing the rider did not start takes the screen (issue 27): a companion's pairing code fills
/// the idle screen only; over a ride it is a badge; any button clears it, and the companion hears
/// that (the `pairingCodeDismissed` effect becomes the control stream's `pairing` line).
struct PairingCodeTakeoverTests {
    static func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: ms) }

    static func press(_ core: inout AppCore, _ b: Button, at ms: Int64) {
        core.handle(.button(ButtonEvent(b, .down, at: at(ms))))
        core.handle(.button(ButtonEvent(b, .up, at: at(ms + 80))))
    }

    static func effects(_ core: inout AppCore) -> [AppEffect] {
        var out: [AppEffect] = []
        while let e = core.drainEffect() { out.append(e) }
        return out
    }

    @Test func onTheIdleScreenAButtonClearsTheCodeAndDoesNothingElse() {
        var core = AppCore(randomSeed: 1)
        core.handle(.command(.showPairingCode(482_913), at: Self.at(0)))
        #expect(Self.effects(&core).contains { if case .reply(let r) = $0 { r.message == "pairing code shown" } else { false } })
        Self.press(&core, .startPause, at: 1_000)
        #expect(core.screen.pairingCode == nil)
        #expect(core.state == .idle, "the press that cleared the code did not start a countdown")
        #expect(Self.effects(&core).contains(.pairingCodeDismissed))
        // The next press is the rider's as always.
        Self.press(&core, .startPause, at: 2_000)
        #expect(core.state == .prepared)
    }

    @Test func overARideTheCodeIsABadgeAndThePressStillActs() {
        var core = AppCore(randomSeed: 2)
        core.handle(.command(.start, at: Self.at(0)))
        core.handle(.tick(Self.at(4_000)))
        #expect(core.state == .running)
        _ = Self.effects(&core)
        core.handle(.command(.showPairingCode(111_222), at: Self.at(5_000)))
        let reply = Self.effects(&core).compactMap { if case .reply(let r) = $0 { r } else { nil } }.first
        #expect(reply?.message.contains("badge") == true, "\(String(describing: reply))")
        #expect(core.screen.pairingCode == 111_222)
        // The rider pauses: the pause happens, and the badge goes.
        Self.press(&core, .startPause, at: 6_000)
        #expect(core.state == .paused)
        #expect(core.screen.pairingCode == nil)
        #expect(Self.effects(&core).contains(.pairingCodeDismissed))
    }

    @Test func aPressWithoutACodeSaysNothingToTheCompanion() {
        var core = AppCore(randomSeed: 3)
        Self.press(&core, .page, at: 0)
        #expect(!Self.effects(&core).contains(.pairingCodeDismissed))
    }
}
