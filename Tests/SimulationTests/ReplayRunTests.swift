import Testing
import TestSupport
import RideFiles
@testable import Simulation

/// The replay of recorded rides follows the recording unit's timer as its events and records
/// say (docs/simulator.md, "Replaying recorded rides"); the shapes here are those of the real
/// recordings Tests/oracle/test_real_recordings.py replays.
struct ReplayRunTests {
    static let t0 = FITBytes.base

    static func replay(_ w: FITBytes) throws -> (run: ReplayRun, summary: String) {
        let run = try ReplayRun(activity: FITActivity(try FITFile(bytes: w.file())), storage: SimulatedFlashStorage())
        run.run()
        return (run, try #require(run.summaryJSON))
    }

    static func number(_ json: String, _ key: String) -> Double? { HeadlessRunTests.number(json, key) }

    /// Records 1 s apart (5 m/s) over [a, b], the activity distance going on from `distance`.
    static func records(_ w: inout FITBytes, _ a: UInt64, _ b: UInt64, from distance: Double) -> Double {
        var d = distance
        for t in a...b {
            if t > a { d += 5 }
            w.record(t, distanceM: d)
        }
        return d
    }

    /// A Garmin Oregon 700 stops its timer (stop_all), starts it again without a start event
    /// (its records go on) and stops it again at the end: the timer ran from the first record
    /// after the first stop. Before: the second stretch was not timed (timer 100 s, not 200 s).
    @Test func aTimerRestartedWithoutAStartEventResumesAtItsFirstRecord() throws {
        var w = FITBytes()
        w.defineActivity()
        w.timer(Self.t0, start: true)
        var d = Self.records(&w, Self.t0, Self.t0 + 100, from: 0)
        w.timer(Self.t0 + 100, start: false)
        d = Self.records(&w, Self.t0 + 300, Self.t0 + 400, from: d)
        w.timer(Self.t0 + 400, start: false)
        w.summary(lap: false, end: Self.t0 + 400, start: Self.t0, elapsedS: 400, timerS: 200, distanceM: d)
        let s = try Self.replay(w).summary
        #expect(Self.number(s, "timer_time_s") == 200)
        #expect(Self.number(s, "elapsed_time_s") == 400)
        // A stop repeated while stopped with no record in between is no restart.
        var v = FITBytes()
        v.defineActivity()
        v.timer(Self.t0, start: true)
        _ = Self.records(&v, Self.t0, Self.t0 + 100, from: 0)
        v.timer(Self.t0 + 100, start: false)
        v.timer(Self.t0 + 160, start: false)
        let s2 = try Self.replay(v).summary
        #expect(Self.number(s2, "timer_time_s") == 100)
        #expect(Self.number(s2, "elapsed_time_s") == 160, "a manual stop after a manual stop ends the ride at the last")
    }

    /// An Edge 800 auto-paused, then was stopped six minutes later with no record in between:
    /// its elapsed time ends at the auto-pause. Before: at the later stop (elapsed 460 s, not 100 s).
    /// With a record after the auto-pause (an Edge 500), the ride ends at the last stop.
    @Test func aRideEndedWhileAutoPausedEndsAtTheAutoPause() throws {
        var w = FITBytes()
        w.defineActivity()
        w.timer(Self.t0, start: true)
        _ = Self.records(&w, Self.t0, Self.t0 + 100, from: 0)
        w.timer(Self.t0 + 100, start: false, auto: true)
        w.timer(Self.t0 + 460, start: false)
        let s = try Self.replay(w).summary
        #expect(Self.number(s, "timer_time_s") == 100)
        #expect(Self.number(s, "elapsed_time_s") == 100)
        var v = FITBytes()
        v.defineActivity()
        v.timer(Self.t0, start: true)
        _ = Self.records(&v, Self.t0, Self.t0 + 100, from: 0)
        v.timer(Self.t0 + 100, start: false, auto: true)
        v.record(Self.t0 + 124, distanceM: 500)
        v.timer(Self.t0 + 124, start: false)
        let s2 = try Self.replay(v).summary
        #expect(Self.number(s2, "timer_time_s") == 100)
        #expect(Self.number(s2, "elapsed_time_s") == 124)
        // One record between the auto-pause and the stop is the unit's record of the stop, not a
        // restart of its timer (the Edge 500 fixture: its timer 10641.06 s, not a second more).
        var e = FITBytes()
        e.defineActivity()
        e.timer(Self.t0, start: true)
        _ = Self.records(&e, Self.t0, Self.t0 + 100, from: 0)
        e.timer(Self.t0 + 100, start: false, auto: true)
        e.record(Self.t0 + 103, distanceM: 500)
        e.timer(Self.t0 + 104, start: false)
        let s3 = try Self.replay(e).summary
        #expect(Self.number(s3, "timer_time_s") == 100)
        #expect(Self.number(s3, "elapsed_time_s") == 104)
    }

    /// Records dated two years ahead (an Edge 500's clock glitch) are left out: the replay ends
    /// with the activity. Before: it ran two simulated years of ticks (it never finished in a test).
    @Test func recordsDatedYearsAheadDoNotStretchTheReplay() throws {
        var w = FITBytes()
        w.defineActivity()
        w.timer(Self.t0, start: true)
        let d = Self.records(&w, Self.t0, Self.t0 + 60, from: 0)
        w.record(Self.t0 + 63_000_000, distanceM: d)
        w.timer(Self.t0 + 60, start: false)
        w.summary(lap: false, end: Self.t0 + 60, start: Self.t0, elapsedS: 60, timerS: 60, distanceM: d)
        let activity = FITActivity(try FITFile(bytes: w.file()))
        let run = try ReplayRun(activity: activity, storage: SimulatedFlashStorage())
        try #require(run.endMs <= (60 + 10) * 1000, "the replay must end with the activity, not two years later")
        run.run()
        let s = try #require(run.summaryJSON)
        #expect(Self.number(s, "timer_time_s") == 60)
        #expect(Self.number(s, "distance_m") == 300)
    }

    /// No timer events: the ride starts at the session's start_time, a second before the first
    /// record (IpBike), so its first second and distance count. Before: 1 s and 5 m short.
    @Test func withoutTimerEventsTheReplayStartsAtTheSessionStart() throws {
        var w = FITBytes()
        w.defineActivity()
        var d = 5.0
        for t in (Self.t0 + 1)...(Self.t0 + 100) { w.record(t, distanceM: d); d += 5 }
        w.summary(lap: false, end: Self.t0 + 100, start: Self.t0, elapsedS: 100, timerS: 100, distanceM: 500)
        let s = try Self.replay(w).summary
        #expect(Self.number(s, "timer_time_s") == 100)
        #expect(Self.number(s, "distance_m") == 500)
    }

    /// A course (gpsbabel's fitwrite-track.fit: file type 6, records of a planned route and a
    /// lap) or a locations file is not a ride: refused with what it is. Before: a course was
    /// replayed as if it had been ridden.
    @Test func aCourseIsNotReplayedAsARide() throws {
        var w = FITBytes()
        w.define(5, global: 0, [.u8(0), .u16(1)])
        w.message(5, [6, 1])
        w.defineActivity()
        w.timer(Self.t0, start: true)
        _ = Self.records(&w, Self.t0, Self.t0 + 30, from: 0)
        let activity = FITActivity(try FITFile(bytes: w.file()))
        #expect(activity.fileType == 6)
        #expect(throws: ReplayRun.ReplayError.self) { try ReplayRun(activity: activity, storage: SimulatedFlashStorage()) }
        do {
            _ = try ReplayRun(activity: activity, storage: SimulatedFlashStorage())
        } catch {
            #expect("\(error)".contains("a course"))
        }
        // An activity file (type 4) with the same records is replayed.
        var v = FITBytes()
        v.define(5, global: 0, [.u8(0), .u16(1)])
        v.message(5, [4, 1])
        v.defineActivity()
        v.timer(Self.t0, start: true)
        _ = Self.records(&v, Self.t0, Self.t0 + 30, from: 0)
        v.timer(Self.t0 + 30, start: false)
        #expect(Self.number(try Self.replay(v).summary, "timer_time_s") == 30)
    }
}
