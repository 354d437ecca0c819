import TestSupport
import Testing
@testable import AppCore
import RideModel
import Training

/// Command replies are decided in one place (`AppCore.handleCommand`, from each action's
/// outcome): every command gets exactly one reply, a button press none, in any state.
struct CommandReplyTests {
    static let commands: [ControlCommand] = [
        .start, .pause, .resume, .lap, .end, .discard, .dismiss, .nextPage, .marker(.water, value: 250),
        .showPairingCode(123_456), .showPairingCode(nil), .setTargetZoneNumber(.heartRate, 2), .clearTargetZone(.power),
        .setAutoPause(AutoPauseSettings()), .setAutoPause(nil), .setAutoLap(AutoLapSettings(everyDistanceM: 1_000)),
        .clearRideZones(.heartRate),
    ]

    static func replies(_ core: inout AppCore) -> [CommandReply] {
        var out: [CommandReply] = []
        while let e = core.drainEffect() { if case .reply(let r) = e { out.append(r) } }
        return out
    }

    @Test func everyCommandOneReplyEveryPressNone() {
        for seed: UInt64 in 1...40 {
            var rng = SeededRandom(seed: seed)
            var core = AppCore(randomSeed: seed)
            var t: Int64 = 0
            for _ in 0..<120 {
                t += Int64(rng.next() % 1_500)
                let now = MonotonicInstant(milliseconds: t)
                switch rng.next() % 4 {
                case 0:
                    let c = Self.commands[Int(rng.next() % UInt64(Self.commands.count))]
                    core.handle(.command(c, at: now))
                    let r = Self.replies(&core)
                    #expect(r.count == 1, "seed \(seed): \(c) in \(core.state) gave \(r.count) replies")
                    #expect(r.first.map { !$0.message.isEmpty } ?? false)
                case 1:
                    let b = Button.allCases[Int(rng.next() % 3)]
                    core.handle(.button(ButtonEvent(b, .down, at: now)))
                    core.handle(.button(ButtonEvent(b, .up, at: now.advanced(byMs: Int64(rng.next() % 2_000)))))
                    #expect(Self.replies(&core).isEmpty, "seed \(seed): a press of \(b) replied")
                case 2:
                    core.handle(.sample(Sample(.speed, 8, at: now)))
                    _ = Self.replies(&core)
                default:
                    core.handle(.tick(now))
                    #expect(Self.replies(&core).isEmpty)
                }
            }
        }
    }

    /// `discard` on the summary deletes a saved ride. Before the replies were decided in one
    /// place it answered "ride deleted" (ok) for a ride that was discarded (or deleted already),
    /// when nothing was deleted.
    @Test func discardOnTheSummaryOfARideNotSavedIsRefused() {
        var core = AppCore(randomSeed: 3)
        core.handle(.command(.start, at: MonotonicInstant(milliseconds: 0)))
        core.handle(.tick(MonotonicInstant(milliseconds: 3_000)))
        core.handle(.tick(MonotonicInstant(milliseconds: 8_000)))
        core.handle(.command(.discard, at: MonotonicInstant(milliseconds: 8_500)))
        #expect(core.state == .ended)
        _ = Self.replies(&core)
        core.handle(.command(.discard, at: MonotonicInstant(milliseconds: 9_000)))
        let r = Self.replies(&core)
        #expect(r.count == 1 && r[0].ok == false, "\(r)")
        var deletions = 0
        while let e = core.drainEffect() { if case .rideDeleted = e { deletions += 1 } }
        #expect(deletions == 0)
        // A saved ride: deleted once, then refused.
        var saved = AppCore(randomSeed: 4)
        saved.handle(.command(.start, at: MonotonicInstant(milliseconds: 0)))
        saved.handle(.tick(MonotonicInstant(milliseconds: 3_000)))
        saved.handle(.tick(MonotonicInstant(milliseconds: 8_000)))
        saved.handle(.command(.end, at: MonotonicInstant(milliseconds: 8_500)))
        _ = Self.replies(&saved)
        saved.handle(.command(.discard, at: MonotonicInstant(milliseconds: 9_000)))
        #expect(Self.replies(&saved).first?.ok == true)
        saved.handle(.command(.discard, at: MonotonicInstant(milliseconds: 9_500)))
        #expect(Self.replies(&saved).first?.ok == false)
    }

    /// The lifecycle's own table and the core's statement of where each action goes agree on
    /// every state and action (`transition` checks it on every transition, in release too).
    @Test func everyAppliedTransitionGoesWhereTheModelSays() {
        for state in SessionState.allCases {
            for action in [SessionAction.prepare, .cancel, .start, .pause, .resume, .lap, .stop, .save, .discard, .dismiss] {
                var l = SessionLifecycle(restoring: state, lastTransition: nil)
                guard l.check(action, at: .zero) == nil else { continue }
                _ = try? l.apply(action, at: .zero)
                #expect(l.state == action.target(from: state), "\(action) from \(state)")
            }
        }
    }
}
