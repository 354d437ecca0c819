import Testing
@testable import RideFiles
import RideModel

/// Issue 17: a board without an RTC. A ride begun on an untrusted clock is dated by the first
/// trusted anchor (the offset learnt when the clock became trusted); a trusted anchor is moved
/// forward (a gap of unknown length, a clock corrected forward) but never backwards, and every
/// record is dated by the anchor in force at its instant, so times never run back. Each test
/// fails on the code before the change (a backward step re-anchored the ride; the last anchor
/// dated every record).
struct ClockTrustTests {
    static let trueStartMs: Int64 = 1_790_000_000_000

    func ms(_ t: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: t) }

    @Test func aTrustedReadingBehindTheAnchorNeverMovesItBack() {
        let a = WallClockAnchor(monotonic: ms(1_000), wall: WallClockTime(unixMs: Self.trueStartMs, trusted: true))
        let behind = WallClockTime(unixMs: Self.trueStartMs + 9_000 - 120_000, trusted: true)
        #expect(a.updated(observed: behind, at: ms(10_000)) == a, "a step back of 2 min is ignored")
        let ahead = WallClockTime(unixMs: Self.trueStartMs + 9_000 + 60_000, trusted: true)
        #expect(a.updated(observed: ahead, at: ms(10_000)) == WallClockAnchor(monotonic: ms(10_000), wall: ahead))
        let untrusted = WallClockTime(unixMs: 0, trusted: false)
        #expect(a.updated(observed: untrusted, at: ms(10_000)) == a)
        let close = WallClockTime(unixMs: Self.trueStartMs + 9_000 + 1_500, trusted: true)
        #expect(a.updated(observed: close, at: ms(10_000)) == a, "within tolerance: kept")
    }

    /// A ride whose header has a stale untrusted clock, a trusted anchor at 30 s, and (after a
    /// gap of unknown length) a trusted anchor 40 s ahead of the prediction at 90 s.
    func records() -> [RideRecord] {
        var sim = SimulatedRide(seed: 5, seconds: 150)
        guard case .header(var h) = sim.records[0] else { return [] }
        let stale = Self.trueStartMs - 400 * 86_400_000
        h.anchor = WallClockAnchor(monotonic: h.anchor.monotonic, wall: WallClockTime(unixMs: stale, trusted: false))
        sim.records[0] = .header(h)
        let origin = h.anchor.monotonic
        let trusted = WallClockAnchor(monotonic: origin.advanced(byMs: 30_000),
                                      wall: WallClockTime(unixMs: Self.trueStartMs + 30_000, trusted: true))
        let forward = WallClockAnchor(monotonic: origin.advanced(byMs: 90_000),
                                      wall: WallClockTime(unixMs: Self.trueStartMs + 90_000 + 40_000, trusted: true))
        var out: [RideRecord] = []
        var placed = (false, false)
        for r in sim.records {
            let t: MonotonicInstant? = switch r {
            case .sample(let s): s.instant
            case .event(let e): e.instant
            default: nil
            }
            if let t, !placed.0, t >= trusted.monotonic { out.append(.wallClock(trusted)); placed.0 = true }
            if let t, !placed.1, t >= forward.monotonic { out.append(.wallClock(forward)); placed.1 = true }
            out.append(r)
        }
        return out
    }

    @Test func aRideBegunOnAnUntrustedClockIsDatedByTheFirstTrustedAnchor() throws {
        let recs = records()
        let export = try RideExport(records: recs)
        guard case .header(let h) = recs[0] else { Issue.record("no header"); return }
        let origin = h.anchor.monotonic
        #expect(export.unixMs(origin) == Self.trueStartMs, "dated by the offset learnt at 30 s")
        #expect(export.unixMs(origin.advanced(byMs: 60_000)) == Self.trueStartMs + 60_000)
        #expect(export.unixMs(origin.advanced(byMs: 100_000)) == Self.trueStartMs + 140_000, "after the forward anchor")
        let ts = FITActivity(try FITFile(bytes: FITEncoder.encode(export))).records.map(\.timestamp)
        #expect(!ts.isEmpty && zip(ts, ts.dropFirst()).allSatisfy { $0 < $1 }, "record times never run back")
    }
}
