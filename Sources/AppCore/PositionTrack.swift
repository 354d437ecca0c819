import Positioning
import RideModel

/// Position and climbing on the screen (docs/gps.md): the breadcrumb is fed from the 1 Hz
/// records (live and when a recovered ride is replayed, so the map survives a crash), and the
/// climbing metrics from the live altitude and grade and the ride's total ascent.
extension AppCore {
    /// Called with a record's position (nil when the record has none): a new point of the track.
    /// Positions more than `Breadcrumb.breakAfterMs` apart are not joined (the fix was lost), the
    /// same live and when the journal is replayed (which has no records of empty seconds).
    mutating func recordTrackPoint(latitude: Double?, longitude: Double?, at instant: MonotonicInstant) {
        guard let lat = latitude, let lon = longitude else { return }
        screen.track.add(latDeg: lat, lonDeg: lon, atMs: instant.milliseconds)
    }

    /// Altitude and grade live (absent when stale); ascent is the ride's total.
    mutating func refreshClimbing(_ ride: StatisticsSet, at now: MonotonicInstant) {
        let live = lifecycle.state == .running
        screen[.altitude] = freshLiveValue(.altitude, at: now)
        screen[.grade] = live ? freshLiveValue(.grade, at: now) : nil
        screen[.ascent] = ride[.ascent].hasData ? ride.totals[Quantity.ascent.index] : nil
    }
}
