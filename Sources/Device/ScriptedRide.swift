import AppCore
import RideModel

/// A short scripted ride through the app core, used by the placeholder demo and tests:
/// start → countdown → running with synthetic samples → pause → resume → lap → long-press end →
/// summary → dismiss. Returns each distinct screen line with its time.
public enum ScriptedRide {
    public struct Step: Sendable {
        public var instant: MonotonicInstant
        public var screen: String
    }

    public static func run(seed: UInt64 = 1) -> [Step] {
        var core = AppCore(configuration: AppConfiguration(), randomSeed: seed)
        var steps: [Step] = []
        var now = MonotonicInstant(milliseconds: 0)
        func feed(_ input: AppInput) {
            core.handle(input)
            while core.drainEffect() != nil {}
            let line = TextScreen.line(core.screen)
            if steps.last?.screen != line { steps.append(Step(instant: input.instant, screen: line)) }
        }
        for role in SensorRole.allCases { feed(.sensor(SensorStatus(role, .connected), at: now)) }
        feed(.button(ButtonEvent(.startPause, .down, at: now)))
        feed(.button(ButtonEvent(.startPause, .up, at: now.advanced(byMs: 120))))
        var distance = 0.0
        func ride(seconds: Int) {
            for _ in 0..<seconds * 4 {
                now = now.advanced(byMs: 250)
                let t = Double(now.milliseconds) / 1000
                let power = 180 + 40 * Double(Int(t) % 7) / 7
                let speed = 8.0 + power / 100
                distance += speed * 0.25
                feed(.sample(Sample(.power, power, at: now)))
                feed(.sample(Sample(.speed, speed, at: now)))
                feed(.sample(Sample(.cadence, 85, at: now)))
                feed(.sample(Sample(.distance, distance, at: now, origin: .generated)))
                if now.milliseconds % 1000 == 0 { feed(.sample(Sample(.heartRate, 120 + t / 10, at: now))) }
                feed(.tick(now))
            }
        }
        ride(seconds: 8)
        feed(.button(ButtonEvent(.startPause, .down, at: now)))
        feed(.button(ButtonEvent(.startPause, .up, at: now.advanced(byMs: 100))))
        now = now.advanced(byMs: 5000)
        feed(.tick(now))
        feed(.button(ButtonEvent(.startPause, .down, at: now)))
        feed(.button(ButtonEvent(.startPause, .up, at: now.advanced(byMs: 100))))
        ride(seconds: 5)
        feed(.button(ButtonEvent(.lap, .down, at: now)))
        feed(.button(ButtonEvent(.lap, .up, at: now.advanced(byMs: 100))))
        ride(seconds: 5)
        feed(.button(ButtonEvent(.startPause, .down, at: now)))
        feed(.button(ButtonEvent(.startPause, .up, at: now.advanced(byMs: 100))))
        now = now.advanced(byMs: 1000)
        feed(.button(ButtonEvent(.startPause, .down, at: now)))
        feed(.tick(now.advanced(byMs: 1600)))
        feed(.button(ButtonEvent(.startPause, .up, at: now.advanced(byMs: 1700))))
        now = now.advanced(byMs: 7000)
        feed(.tick(now))
        feed(.button(ButtonEvent(.lap, .down, at: now)))
        feed(.button(ButtonEvent(.lap, .up, at: now.advanced(byMs: 100))))
        return steps
    }
}
