import AppCore
import RideModel
import Testing

/// The radar in the app core: the column's picture only while the radar is connected, one beep per
/// arrival (none within the gap: no storm in traffic), one clear beep after the hold, nothing
/// while lost, and the ride's radar events with their statistics.
@Suite struct RadarCoreTests {
    struct Harness {
        var core: AppCore
        var ms: Int64 = 0
        var alerts: [Alert] = []
        var events: [RideEvent] = []

        init(radar: Bool = true) {
            var config = AppConfiguration()
            config = AppConfiguration(expectedSensors: radar ? [.heartRate, .radar] : [.heartRate])
            core = AppCore(configuration: config, randomSeed: 3)
        }

        var now: MonotonicInstant { MonotonicInstant(milliseconds: ms) }

        mutating func feed(_ i: AppInput) {
            core.handle(i)
            while let e = core.drainEffect() {
                if case .alert(let a) = e { alerts.append(a) }
                if case .journal(.event(let ev)) = e, ev.kind == .radar { events.append(ev) }
            }
        }

        mutating func radar(_ state: SensorState) { feed(.sensor(.status(SensorStatus(.radar, state), at: now))) }

        mutating func picture(at ms: Int64, _ ranges: [Double], fast: Bool = false) {
            self.ms = ms
            feed(.sensor(.radar(RadarPicture(ranges.map { RadarTarget(rangeM: $0, closingSpeedMps: fast ? 15 : 8, threat: fast ? .fastApproach : .approaching) }), at: now)))
        }

        var vehicleBeeps: Int { alerts.filter { if case .vehicleBehind = $0 { true } else { false } }.count }
        var clearBeeps: Int { alerts.filter { $0 == .roadClear }.count }
    }

    @Test func aVehicleBeepsOnceAndTheClearRoadOnceAfterTheHold() {
        var h = Harness()
        h.radar(.connected)
        #expect(h.core.screen.radarShown)
        for t in stride(from: Int64(0), to: 1_000, by: 125) { h.picture(at: t, []) }
        #expect(h.alerts.isEmpty, "a clear road from the start says nothing")
        for (i, t) in stride(from: Int64(1_000), to: 9_000, by: 125).enumerated() { h.picture(at: t, [120 - Double(i)]) }
        #expect(h.vehicleBeeps == 1 && h.core.screen.radar.count == 1)
        #expect(h.alerts.first == .vehicleBehind(.approaching) && Alert.vehicleBehind(.approaching).beep == .vehicle)
        h.picture(at: 9_000, [])
        h.picture(at: 9_125, [12])  // the radar loses it for a frame: no clear, no new beep within the gap
        for t in stride(from: Int64(9_250), to: 10_000, by: 125) { h.picture(at: t, []) }
        #expect(h.clearBeeps == 0)
        for t in stride(from: Int64(10_000), to: 12_500, by: 125) { h.picture(at: t, []) }
        #expect(h.clearBeeps == 1 && h.vehicleBeeps == 1, "\(h.alerts)")
        #expect(h.alerts.last == .roadClear && Alert.roadClear.beep != Alert.vehicleBehind(.approaching).beep)
        // `ctl status` → radar counts the beeps the core sounded.
        #expect(h.core.radarAlerting.vehicleBeeps == 1 && h.core.radarAlerting.clearBeeps == 1)
    }

    @Test func trafficGivesNoBeepStorm() {
        var h = Harness()
        h.radar(.connected)
        // A car every second for a minute, closing at 20 m/s: one comes into view as another
        // passes, so the count stays the same; the road is never clear.
        for f in 0..<(60 * 8) {
            let t = Double(f) / 8
            let ranges = (0...8).map { 140 - 20 * (t - (t.rounded(.down) - Double($0))) }.filter { $0 > 0 && $0 <= 140 }
            h.picture(at: Int64(f) * 125, ranges)
        }
        #expect(h.vehicleBeeps <= 60 * 1000 / Int(RadarAlerting.vehicleBeepGapMs) + 1 && h.vehicleBeeps >= 10, "\(h.vehicleBeeps) beeps")
        #expect(h.clearBeeps == 0)
        #expect(h.core.radarAlerting.beepsHeldBack > 0)
        #expect(h.core.radarAlerting.vehicleBeeps == UInt64(h.vehicleBeeps) && h.core.radarAlerting.clearBeeps == 0)
    }

    @Test func aLostRadarShowsNoVehiclesAndNeverBeeps() {
        var h = Harness()
        h.radar(.connected)
        h.picture(at: 0, [50])
        h.radar(.lost)
        #expect(h.core.screen.radar.isClear && h.core.screen.sensor(.radar) == .lost)
        let before = h.alerts.count
        h.picture(at: 5_000, [40])  // a frame racing the state: not shown
        h.ms = 20_000
        h.feed(.tick(h.now))
        #expect(h.core.screen.radar.isClear && h.alerts.count == before, "\(h.alerts)")
        // Back: the vehicles in view are news.
        h.radar(.connected)
        h.picture(at: 21_000, [40])
        #expect(h.vehicleBeeps == 2)
    }

    @Test func withoutARadarThereIsNoColumn() {
        var h = Harness(radar: false)
        #expect(!h.core.screen.radarShown)
        h.picture(at: 0, [50])
        #expect(h.core.screen.radar.isClear && h.alerts.isEmpty)
    }

    @Test func theRideRecordsItsVehiclesAndItsWorstThreat() {
        var h = Harness()
        h.radar(.connected)
        h.picture(at: 0, [90])
        #expect(h.events.isEmpty, "no ride: beeped, not recorded")
        h.feed(.command(.start, at: h.now))
        h.ms = 3_100
        h.feed(.tick(h.now))  // the countdown is over: running
        #expect(h.core.state == .running)
        h.picture(at: 3_200, [])
        h.picture(at: 5_000, [100])
        h.picture(at: 5_125, [99, 130])            // a second one within the gap: counted, not beeped
        h.picture(at: 9_000, [30, 60, 140], fast: true)
        #expect(h.events.count == 3)
        let records = h.events.compactMap { RadarAlertRecord(value: $0.value) }
        #expect(records.map(\.vehiclesArrived) == [1, 1, 1] && records.map(\.alerted) == [true, false, true])
        #expect(records.last?.maxThreat == .fastApproach && records.last?.vehiclesInView == 3 && records.last?.maxClosingSpeedMps == 15)
        let s = h.core.builder!.radar
        #expect(s.vehicles == 3 && s.alerts == 2 && s.maxThreat == .fastApproach)
    }

    @Test func recordsRoundTripThroughTheirValue() {
        for arrived in 1...8 {
            for threat in RadarThreat.allCases {
                let r = RadarAlertRecord(vehiclesArrived: arrived, vehiclesInView: 9 - arrived, maxThreat: threat, alerted: arrived % 2 == 0,
                                         averageClosingSpeedMps: arrived == 3 ? nil : Double(arrived) * 1.37, maxClosingSpeedMps: 40)
                #expect(RadarAlertRecord(value: r.value) == r)
                #expect(r.maxClosingSpeedMps == 25.4, "FIT keeps m/s × 10 in a byte")
            }
        }
        #expect(RadarAlertRecord(value: -1) == nil && RadarAlertRecord(value: 1 << 40) == nil)
    }
}
