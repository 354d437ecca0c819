import TestSupport
import Testing
import RideModel
@testable import RideFiles

/// What real units' files hold that the app must read (Tests/oracle/test_real_recordings.py
/// replays the recordings themselves): a garbled end, a damaged definition, records dated by a
/// clock glitch, a timer started a second before the first record.
struct FITRealUnitQuirksTests {
    static let t0 = FITBytes.base

    /// A short activity: a timer start, 11 records a second apart (5 m each), a stop, a lap,
    /// a session and an activity message.
    static func activity(extraRecords: [UInt64] = [], timerEvents: Bool = true, sessionStart: UInt64? = nil) -> FITBytes {
        var w = FITBytes()
        w.defineActivity()
        if timerEvents { w.timer(t0, start: true) }
        for i in 0...10 { w.record(t0 + UInt64(i), distanceM: Double(i) * 5) }
        for t in extraRecords { w.record(t, distanceM: 50) }
        if timerEvents { w.timer(t0 + 10, start: false) }
        let start = sessionStart ?? t0
        w.summary(lap: true, end: t0 + 10, start: start, elapsedS: Double(t0 + 10 - start), timerS: Double(t0 + 10 - start), distanceM: 50)
        w.summary(lap: false, end: t0 + 10, start: start, elapsedS: Double(t0 + 10 - start), timerS: Double(t0 + 10 - start), distanceM: 50)
        w.message(4, [t0 + 10, 10_000])
        return w
    }

    /// The Lezyne Super GPS file in gpsbabel's reference set: the ride, its laps and session are
    /// intact, then the data goes on as garbage (a definition whose architecture byte is not 0 or
    /// 1) and the file CRC does not match. Read strictly it is refused; recovered, the messages
    /// before the damage are the ride. Before: no recovery, the whole ride was refused.
    @Test func aDamagedEndIsRecoveredUpToTheDamage() throws {
        var w = Self.activity()
        let intact = w.data.count + 14
        w.data += [0x45, 0, 7, 0x0A, 0x37, 3, 1, 1, 2, 3, 4, 5, 6, 0xEE, 0x05, 1, 2, 3] // garbage
        var bytes = w.file()
        bytes[bytes.count - 1] ^= 0x5A // the file CRC does not match either
        #expect(throws: RideFileError.self) { try FITFile(bytes: bytes) }
        let file = try FITFile(bytes: bytes, recover: true)
        let damage = try #require(file.damage)
        #expect(damage.contains("CRC"))
        #expect(damage.contains("architecture byte 7"))
        #expect(file.bytesRead == intact)
        let a = FITActivity(file)
        #expect(a.records.count == 11)
        #expect(a.sessions.count == 1 && a.laps.count == 1)
        // An intact file has no damage and reads to its end.
        let clean = try FITFile(bytes: Self.activity().file(), recover: true)
        #expect(clean.damage == nil)
        #expect(clean.bytesRead == Self.activity().data.count + 14)
    }

    /// A file cut short (its data size runs past the end) gives what it holds when recovered.
    @Test func aTruncatedFileIsRecoveredUpToItsEnd() throws {
        let bytes = Self.activity().file()
        let cut = Array(bytes.prefix(bytes.count - 40))
        #expect(throws: RideFileError.self) { try FITFile(bytes: cut) }
        let file = try FITFile(bytes: cut, recover: true)
        #expect(file.damage?.contains("truncated") == true)
        #expect(FITActivity(file).records.count == 11)
    }

    /// A definition's architecture byte is 0 or 1; any other is damage, not little-endian data.
    /// Before: read as little-endian, the garbage after it became messages.
    @Test func anArchitectureByteAboveOneIsMalformed() throws {
        var w = FITBytes()
        w.define(0, global: 20, [.u32(253), .u8(3)], architecture: 2)
        w.message(0, [Self.t0, 120])
        #expect(throws: RideFileError.malformed("definition with architecture byte 2 (not 0 or 1)")) { try FITFile(bytes: w.file()) }
    }

    /// An Edge 500 (GoldenCheetah's test ride 2013-04-11) wrote three records dated two years
    /// ahead in the middle of a ride: they are outside the activity (after its session, laps,
    /// timer events and activity message) and left out, as the unit's own figures leave them out.
    /// Before: sorted in, they made the replay two years long.
    @Test func recordsDatedOutsideTheActivityAreLeftOut() throws {
        let twoYears: UInt64 = 2 * 365 * 86_400
        let a = FITActivity(try FITFile(bytes: Self.activity(extraRecords: [Self.t0 + twoYears, Self.t0 + twoYears + 1]).file()))
        #expect(a.records.count == 11)
        #expect(a.recordsOutsideActivity == 2)
        #expect(a.records.map(\.timestamp).max() == UInt32(Self.t0 + 10))
        // Records shortly before the timer start still belong to the ride (units that record
        // before it starts); a file with no session, laps, events or activity is not cut.
        let early = FITActivity(try FITFile(bytes: Self.activity(extraRecords: [Self.t0 - 5]).file()))
        #expect(early.records.count == 12 && early.recordsOutsideActivity == 0)
        var bare = FITBytes()
        bare.defineActivity()
        bare.record(Self.t0, distanceM: 0)
        bare.record(Self.t0 + twoYears, distanceM: 1)
        #expect(FITActivity(try FITFile(bytes: bare.file())).records.count == 2)
    }

    /// Without timer events the ride starts at the session's start_time when that is at or just
    /// before the first record (IpBike starts its timer a second before its first record); else
    /// at the first record. Before: always at the first record, a second short.
    @Test func withoutTimerEventsTheSessionStartTimeStartsTheRide() throws {
        let a = FITActivity(try FITFile(bytes: Self.activity(timerEvents: false, sessionStart: Self.t0 - 1).file()))
        #expect(a.startTimestamp == UInt32(Self.t0 - 1))
        let records = a.rideRecords(rideID: RideID(high: 1, low: 2))
        let start = records.compactMap { r -> MonotonicInstant? in
            if case .event(let e) = r, e.kind == .start { return e.instant }
            return nil
        }
        #expect(start.count == 1)
        // The first record is one second after the start.
        let firstSample = records.compactMap { r -> MonotonicInstant? in if case .sample(let s) = r, s.quantity == .heartRate { return s.instant }; return nil }.first
        #expect(firstSample.map { $0.milliseconds - start[0].milliseconds } == 1_000)
        // A start_time long before the first record is not taken.
        let far = FITActivity(try FITFile(bytes: Self.activity(timerEvents: false, sessionStart: Self.t0 - 600).file()))
        #expect(far.startTimestamp == UInt32(Self.t0))
        // Timer events win over the session.
        let timed = FITActivity(try FITFile(bytes: Self.activity(timerEvents: true, sessionStart: Self.t0 - 1).file()))
        #expect(timed.startTimestamp == UInt32(Self.t0))
    }
}
