import AppCore
import RideModel
import Testing

/// The summary's charts come from the ride's interval table: one time-weighted average per
/// 60 s of timer time, per charted quantity.
struct SummaryChartsTests {
    @Test func chartsHoldTheMinuteAveragesOfTheRide() {
        var core = AppCore(randomSeed: 3)
        var now = MonotonicInstant(milliseconds: 0)
        func feed(_ input: AppInput) {
            core.handle(input)
            while core.drainEffect() != nil {}
        }
        feed(.command(.start, at: now))
        now = now.advanced(byMs: 3_000)
        feed(.tick(now))
        #expect(core.state == .running)
        // Three minutes: 100 W, then 200 W, then 300 W; speed 5 m/s throughout.
        for s in 0..<180 {
            feed(.sample(Sample(.power, Double(100 * (1 + s / 60)), at: now)))
            feed(.sample(Sample(.speed, 5, at: now)))
            now = now.advanced(byMs: 1_000)
            feed(.tick(now))
        }
        feed(.command(.end, at: now))
        let charts = try! #require(core.summary?.charts)
        #expect(charts.intervalMs == 60_000)
        let power = try! #require(charts.series(.power))
        #expect(power.count == charts.bucketCount)
        #expect(power.count >= 3)
        // Each value is held until the next record, so a minute may carry one second of the
        // value before it: at most 100 W / 60 away from the minute's own value.
        for (i, want) in [100.0, 200, 300].enumerated() {
            #expect(abs(power[i] - want) <= 100.0 / 60 + 1e-6, "minute \(i + 1): \(power[i]) W")
        }
        #expect(power[0] < power[1] && power[1] < power[2])
        let speed = try! #require(charts.series(.speed))
        #expect(speed.prefix(3).allSatisfy { abs($0 - 5) < 0.01 })
        #expect(charts.series(.heartRate) == nil, "no heart-rate data: no chart")
        #expect(charts.series(.altitude) == nil)
    }
}
