import Testing
@testable import RideModel

/// The ride-figure bugs of issue 20, one test each; every one of them failed on the builder
/// before the fix (the commit says how).
struct BuilderRegressionTests {
    static func ms(_ v: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: v) }

    /// 30 min at 30 km/h, a 10 min stop, 30 min more at 30 km/h: the live average speed is
    /// 30 km/h at every second, also after the pause (it climbed to 60 km/h: the timer time it
    /// divided by was frozen at the pause).
    @Test func liveAverageSpeedStaysRightAfterAPause() throws {
        var b = RideBuilder()
        try b.start(at: Self.ms(0))
        try b.add(Sample(.distance, 0, at: Self.ms(0)))
        let v = 30 / 3.6
        var distance = 0.0
        var t: Int64 = 0
        func ride(until end: Int64) throws {
            while t < end {
                t += 1_000
                distance += v
                try b.add(Sample(.distance, distance, at: Self.ms(t)))
                b.advance(to: Self.ms(t))
                let avg = try #require(b.ride.averageSpeedMps)
                #expect(abs(avg * 3.6 - 30) < 0.01, "at \(t) ms: \(avg * 3.6) km/h")
                #expect(abs((b.currentLap?.statistics.averageSpeedMps ?? 0) * 3.6 - 30) < 0.01, "lap at \(t) ms")
            }
        }
        try ride(until: 1_800_000)
        try b.pause(at: Self.ms(t))
        t += 600_000
        try b.resume(at: Self.ms(t))
        try b.add(Sample(.distance, distance, at: Self.ms(t))) // the counter at the resume
        try ride(until: t + 1_800_000)
        #expect(b.timerTimeMs(at: Self.ms(t)) == 3_600_000)
    }

    /// A crash while running: the gap (the device was down 5 min) is elapsed time, not timer
    /// time, for the ride and its lap (it was counted as timer time).
    @Test func aRecoveryGapIsElapsedNotTimerTime() throws {
        var b = RideBuilder()
        try b.start(at: Self.ms(0))
        for t in stride(from: Int64(0), through: 60_000, by: 1_000) { try b.add(Sample(.power, 200, at: Self.ms(t))) }
        try b.mark(RideEvent(.gap, at: Self.ms(60_000), value: 300_000))
        for t in stride(from: Int64(360_000), through: 420_000, by: 1_000) { try b.add(Sample(.power, 100, at: Self.ms(t))) }
        b.advance(to: Self.ms(420_000))
        try b.stop(at: Self.ms(420_000))
        let end = Self.ms(420_000)
        #expect(b.timerTimeMs(at: end) == 120_000)
        #expect(b.elapsedTimeMs(at: end) == 420_000)
        #expect(b.laps[0].statistics.timerTimeMs == 120_000)
        #expect(b.ride[.power].weightMs == 120_000, "power counted over timer time only")
        #expect(b.ride[.power].average == 150)
    }

    /// A power meter that stops for 10 s: the 10 s have no power at all. Before, the last value
    /// was held 5 s (and the app recorded it 3 s more): 200 W averaged over time never ridden.
    @Test func aSilentSensorAddsNoValueThatNeverHappened() throws {
        var b = RideBuilder(settings: RideSettings(powerZones: try ZoneConfiguration(quantity: .power, boundaries: [150])))
        try b.start(at: Self.ms(0))
        for t in stride(from: Int64(0), to: 10_000, by: 1_000) { try b.add(Sample(.power, 200, at: Self.ms(t))) }
        // silence from 10 s to 20 s
        for t in stride(from: Int64(10_000), to: 20_000, by: 500) { b.advance(to: Self.ms(t)) }
        for t in stride(from: Int64(20_000), to: 30_000, by: 1_000) { try b.add(Sample(.power, 100, at: Self.ms(t))) }
        try b.stop(at: Self.ms(30_000))
        #expect(b.ride[.power].weightMs == 20_000, "10 s of 200 W and 10 s of 100 W, nothing in between")
        #expect(b.ride[.power].average == 150)
        #expect(b.powerZoneTimes.values == [10_000, 10_000])
    }

    /// One missed record (BLE timing) is bridged: a 1 Hz sensor that skips a second is not a
    /// dropout.
    @Test func oneMissedRecordIsBridged() throws {
        var b = RideBuilder()
        try b.start(at: Self.ms(0))
        for t: Int64 in [0, 1_000, 3_000, 4_000] { try b.add(Sample(.heartRate, 120, at: Self.ms(t))) }
        b.advance(to: Self.ms(5_000))
        #expect(b.ride[.heartRate].weightMs == 5_000)
    }

    /// A sample exactly at the stop instant: its maximum and its distance count (both were
    /// dropped).
    @Test func aSampleAtTheStopInstantCounts() throws {
        var b = RideBuilder()
        try b.start(at: Self.ms(0))
        try b.add(Sample(.heartRate, 150, at: Self.ms(0)))
        try b.add(Sample(.distance, 0, at: Self.ms(0)))
        try b.add(Sample(.distance, 8, at: Self.ms(1_000)))
        try b.stop(at: Self.ms(1_500))
        try b.add(Sample(.heartRate, 181, at: Self.ms(1_500)))
        try b.add(Sample(.distance, 12, at: Self.ms(1_500)))
        #expect(b.ride[.heartRate].max == 181)
        #expect(b.ride.distanceM == 12)
        #expect(b.laps[0].statistics.distanceM == 12)
        #expect(b.ride[.heartRate].weightMs == 1_500, "no time weight for the stop instant's value")
        #expect(throws: BuilderRejection.notCollecting) { try b.add(Sample(.heartRate, 190, at: Self.ms(1_501))) }
    }

    /// The event table keeps room for the ride's own events: markers stop before it is full,
    /// pauses and laps still work, and the stop always does.
    @Test func theEventTableKeepsRoomForTheLifecycle() throws {
        var b = RideBuilder(settings: RideSettings(eventsMax: 40))
        try b.start(at: Self.ms(0))
        var t: Int64 = 0
        var markers = 0
        while b.canRecord(.marker) {
            t += 10
            try b.mark(RideEvent(.marker, at: Self.ms(t)))
            markers += 1
        }
        #expect(markers == 40 - 1 - b.settings.eventsReservedForLifecycle)
        #expect(throws: BuilderRejection.capacityReached) { try b.mark(RideEvent(.marker, at: Self.ms(t + 1))) }
        while b.canRecord(.pause) {
            t += 10
            if b.isRunning { try b.pause(at: Self.ms(t)) } else { try b.resume(at: Self.ms(t)) }
        }
        #expect(b.check(.pause, at: Self.ms(t + 10)) != nil && b.check(.resume, at: Self.ms(t + 10)) != nil)
        try b.stop(at: Self.ms(t + 10))
        #expect(b.events.count == 40)
    }

    /// Garmin's defaults: cadence averaged without zeros (coasting), power with zeros; both
    /// switchable by the ride's metadata, which also applies to what was already collected.
    @Test func zeroAveragingConventions() throws {
        var b = RideBuilder()
        try b.start(at: Self.ms(0))
        for (i, t) in stride(from: Int64(0), to: 10_000, by: 1_000).enumerated() {
            try b.add(Sample(.cadence, i < 5 ? 90 : 0, at: Self.ms(t)))
            try b.add(Sample(.power, i < 5 ? 200 : 0, at: Self.ms(t)))
        }
        b.advance(to: Self.ms(10_000))
        #expect(b.ride[.cadence].average == 90, "cadence without zeros")
        #expect(b.ride[.cadence].averageIncludingZeros == 45)
        #expect(b.ride[.power].average == 100, "power with zeros")
        #expect(b.ride[.power].averageExcludingZeros == 200)
        b.setMetadata(RideBuilder.cadenceAveragingKey, "with_zeros")
        b.setMetadata(RideBuilder.powerAveragingKey, "without_zeros")
        #expect(b.ride[.cadence].average == 45)
        #expect(b.ride[.power].average == 200)
        #expect(b.laps[0].statistics[.power].average == 200)
        #expect(b.intervals.statistics(bucket: 0, .power).average == 200)
    }

    /// Moving time: timer time at 1 m/s or more (nil without speed data).
    @Test func movingTime() throws {
        var b = RideBuilder()
        try b.start(at: Self.ms(0))
        #expect(b.ride.movingTime == nil)
        for t in stride(from: Int64(0), to: 20_000, by: 1_000) { try b.add(Sample(.speed, t < 12_000 ? 8 : 0.5, at: Self.ms(t))) }
        try b.stop(at: Self.ms(20_000))
        #expect(b.ride.movingTime == 12_000)
        #expect(b.ride.timerTimeMs == 20_000)
        #expect(b.laps[0].statistics.movingTime == 12_000)
    }
}
