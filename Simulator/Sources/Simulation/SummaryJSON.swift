import AppCore
import Control
import RideModel

/// summary.json: the app's own summary of a ride, with exactly the keys of the simulator issue
/// (null where there was no data). Written by the simulator (`bikesim run`, `bikesim replay`)
/// from the core; the board never builds it.
public enum SummaryJSON {
    /// Writes the statistic keys shared by the ride and each lap.
    static func statistics(_ w: inout JSONWriter, _ s: StatisticsSet, timerMs: Int64, elapsedMs: Int64,
                           startUTC: String?, np: Double?, hrZones: ZoneTimes?, powerZones: ZoneTimes?, lostMs: Int64, recovered: Bool) {
        w.string("start_time_utc", startUTC)
        w.number("timer_time_s", Double(timerMs) / 1000)
        w.number("elapsed_time_s", Double(elapsedMs) / 1000)
        w.number("moving_time_s", s.movingTime.map { Double($0) / 1000 })
        w.number("distance_m", s[.distance].hasData ? s.distanceM : nil, decimals: 2)
        w.number("avg_speed_mps", s.averageSpeedMps)
        w.number("avg_moving_speed_mps", s.averageMovingSpeedMps)
        w.number("max_speed_mps", s[.speed].max)
        w.number("avg_hr_bpm", s[.heartRate].average, decimals: 1)
        w.number("max_hr_bpm", s[.heartRate].max, decimals: 1)
        w.number("avg_power_w", s[.power].average, decimals: 1)
        w.number("max_power_w", s[.power].max, decimals: 1)
        w.number("normalized_power_w", np, decimals: 1)
        w.number("avg_cadence_rpm", s[.cadence].average, decimals: 1)
        w.number("max_cadence_rpm", s[.cadence].max, decimals: 1)
        // Climbing (docs/gps.md): null without altitude.
        w.number("ascent_m", s[.ascent].hasData ? s.totals[Quantity.ascent.index] : nil, decimals: 1)
        w.number("descent_m", s[.descent].hasData ? s.totals[Quantity.descent.index] : nil, decimals: 1)
        zones(&w, "time_in_hr_zone_s", hrZones)
        zones(&w, "time_in_power_zone_s", powerZones)
        w.number("samples_lost_s", Double(lostMs) / 1000)
        w.bool("recovered", recovered)
    }

    static func zones(_ w: inout JSONWriter, _ key: String, _ z: ZoneTimes?) {
        guard let z, z.zoneCount > 0 else { w.raw(key, "null"); return }
        w.beginArray(key)
        for i in 0..<z.zoneCount { w.number(nil, Double(z[i]) / 1000) }
        w.endArray()
    }

    static func utc(_ anchor: WallClockAnchor, _ instant: MonotonicInstant) -> String? {
        let wall = anchor.wallTime(at: instant)
        guard wall.trusted else { return nil } // never print a date the device does not know
        return UTCDateTime(unixMs: wall.unixMs).iso8601
    }

    /// The summary of the core's current (or last) ride; nil when no ride has started.
    public static func make(_ core: AppCore, at now: MonotonicInstant) -> String? {
        guard let b = core.builder, let h = core.header, let start = b.startInstant else { return nil }
        let end = b.stopInstant ?? now
        let anchor = core.wallAnchorForRide ?? h.anchor
        var w = JSONWriter()
        w.beginObject()
        w.string("ride_id", h.rideID.description)
        w.string("state", core.state.description)
        w.beginObject("averaging")
        w.string("cadence", RideBuilder.averagingValue(b.zeroAveraging[Quantity.cadence.index]))
        w.string("power", RideBuilder.averagingValue(b.zeroAveraging[Quantity.power.index]))
        w.endObject()
        statistics(&w, b.statistics(at: end), timerMs: b.timerTimeMs(at: end), elapsedMs: b.elapsedTimeMs(at: end),
                   startUTC: utc(anchor, start), np: b.normalizedPowerW,
                   hrZones: h.settings.heartRateZones == nil ? nil : b.heartRateZoneTimes,
                   powerZones: h.settings.powerZones == nil ? nil : b.powerZoneTimes,
                   lostMs: core.gapsMs + Int64(core.recordsSkipped) * 1000, recovered: core.recovered)
        if core.screen.radarShown {
            // The rear radar (docs/simulator.md, "Radar"): vehicles that came up behind, the
            // beeps for them, the worst threat.
            w.beginObject("radar")
            w.int("vehicles", Int64(b.radar.vehicles))
            w.int("alerts", Int64(b.radar.alerts))
            w.string("max_threat", b.radar.maxThreat.description)
            w.number("max_closing_speed_mps", b.radar.maxClosingSpeedMps, decimals: 1)
            w.endObject()
        }
        w.beginArray("laps")
        for lap in b.laps {
            w.beginObject()
            w.int("index", Int64(lap.index))
            w.string("trigger", lap.trigger?.description)
            let lapEnd = lap.endInstant ?? end
            let lapGaps = b.events.filter { $0.kind == .gap && $0.instant >= lap.startInstant && $0.instant < lapEnd }.reduce(0) { $0 + $1.value }
            let lapStats = b.lapStatistics(lap.index, at: end)
            statistics(&w, lapStats, timerMs: lapStats.timerTimeMs,
                       elapsedMs: lap.elapsedMs(at: end), startUTC: utc(anchor, lap.startInstant),
                       np: lap.normalizedPower.normalizedPowerW,
                       hrZones: h.settings.heartRateZones == nil ? nil : lap.heartRateZoneTimes,
                       powerZones: h.settings.powerZones == nil ? nil : lap.powerZoneTimes,
                       lostMs: lapGaps, recovered: core.recovered)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.text + "\n"
    }
}

/// Keeps the summary.json of the last ride that finished, made from the core at the moment it
/// finished (a later ride or a reboot replaces the core). A `RideObserver` of the simulator's
/// runtime, so the board's runtime builds no summary nobody reads.
public final class SummaryRecorder: RideObserver {
    public private(set) var lastFinishedJSON: String?

    public init() {}

    public func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant) {
        if case .rideFinished = effect { lastFinishedJSON = SummaryJSON.make(core, at: now) }
    }
}
