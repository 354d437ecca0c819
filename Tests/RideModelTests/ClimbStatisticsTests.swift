import RideModel
import Testing

/// Ascent and descent are cumulative like distance, but their change across a pause counts (as
/// the recording devices count it, docs/gps.md); distance's does not.
@Suite struct ClimbStatisticsTests {
    static func at(_ s: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: s * 1000) }

    @Test func theClimbAcrossAPauseCountsTheDistanceDoesNot() throws {
        var b = RideBuilder()
        try b.start(at: Self.at(0))
        for s in 0...10 {
            try b.add(Sample(.ascent, Double(s), at: Self.at(Int64(s))))
            try b.add(Sample(.distance, Double(s) * 5, at: Self.at(Int64(s))))
        }
        try b.pause(at: Self.at(10))
        // While paused: 3 m more climbing, 40 m more distance (read, not counted).
        try b.add(Sample(.ascent, 12, at: Self.at(15)))
        try b.add(Sample(.distance, 80, at: Self.at(15)))
        try b.resume(at: Self.at(20))
        for s in 20...30 {
            try b.add(Sample(.ascent, 13 + Double(s - 20), at: Self.at(Int64(s))))
            try b.add(Sample(.distance, 90 + Double(s - 20) * 5, at: Self.at(Int64(s))))
        }
        try b.stop(at: Self.at(30))
        #expect(b.ride.totals[Quantity.ascent.index] == 23, "10 + 3 across the pause + 10")
        #expect(b.ride.totals[Quantity.distance.index] == 100, "50 + 50: the paused 40 m is not the ride's")
    }

    /// A counter that starts again (a restarted device's altimetry) is not a descent of the
    /// total: the decrease is not counted, the climbing after it is.
    @Test func aCounterResetIsNotCounted() throws {
        var b = RideBuilder()
        try b.start(at: Self.at(0))
        try b.add(Sample(.ascent, 50, at: Self.at(1)))
        try b.add(Sample(.ascent, 60, at: Self.at(2)))
        try b.add(Sample(.ascent, 0, at: Self.at(3)))
        try b.add(Sample(.ascent, 4, at: Self.at(4)))
        try b.stop(at: Self.at(5))
        #expect(b.ride.totals[Quantity.ascent.index] == 14)
    }
}
