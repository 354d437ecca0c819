import AppCore
import Control
import Navigation
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

    /// A cue as the ride announced it (first word of it).
    public struct AnnouncedCue: Sendable, Hashable {
        public var index: Int
        public var alongM: Double
        public var type: CueType
        public var name: String
        public var stage: CueStage
        /// How far before the cue, m.
        public var beforeM: Double
        public var atElapsedMs: Int64
    }

    /// `navigation`: the course, where the ride ended on it, the off-course periods, the cues as
    /// announced and the course's climbs (docs/navigation.md); absent without a course.
    static func navigation(_ w: inout JSONWriter, _ core: AppCore, cues: [AnnouncedCue]) {
        guard let c = core.course else { return }
        let v = core.courseFollower?.view
        w.beginObject("navigation")
        w.string("course", c.name)
        w.int("points", Int64(c.pointCount))
        w.number("length_m", c.lengthM, decimals: 1)
        w.number("ascent_m", c.hasAltitude ? c.totalAscentM : nil, decimals: 1)
        w.string("state", v.map { "\($0.state)" })
        w.number("distance_to_go_m", v?.distanceToGoM, decimals: 1)
        w.beginArray("off_course")
        for p in core.offCoursePeriods {
            w.beginObject()
            w.number("start_elapsed_s", Double(p.startMs) / 1000)
            w.number("end_elapsed_s", Double(p.endMs) / 1000)
            w.number("alarm_elapsed_s", Double(p.alarmMs) / 1000)
            w.number("max_distance_m", p.maxDistanceM, decimals: 1)
            w.bool("wrong_way", p.wrongWay)
            w.endObject()
        }
        w.endArray()
        w.int("cue_count", Int64(c.cues.count))
        w.beginArray("cues")
        for a in cues {
            w.beginObject()
            w.int("index", Int64(a.index))
            w.number("distance_m", a.alongM, decimals: 1)
            let p = c.position(atAlongM: a.alongM)
            w.number("lat", p.latDeg, decimals: 7)
            w.number("lon", p.lonDeg, decimals: 7)
            w.string("type", a.type.name)
            w.string("name", a.name)
            w.string("stage", a.stage.description)
            w.number("before_m", a.beforeM, decimals: 1)
            w.number("announced_elapsed_s", Double(a.atElapsedMs) / 1000)
            w.endObject()
        }
        w.endArray()
        w.beginArray("climbs")
        for k in c.climbs {
            w.beginObject()
            for f in k.figures { w.number(f.key, f.value, decimals: f.decimals) }
            w.int("category", k.category.map(Int64.init))
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }

    /// The summary of the core's current (or last) ride; nil when no ride has started.
    public static func make(_ core: AppCore, at now: MonotonicInstant, cues: [AnnouncedCue] = []) -> String? {
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
        navigation(&w, core, cues: cues)
        w.endObject()
        return w.text + "\n"
    }
}

/// Keeps the summary.json of the last ride that finished, made from the core at the moment it
/// finished (a later ride or a reboot replaces the core). A `RideObserver` of the simulator's
/// runtime, so the board's runtime builds no summary nobody reads.
public final class SummaryRecorder: RideObserver {
    public private(set) var lastFinishedJSON: String?
    /// The cues announced in the ride in progress (the first announcement of each).
    public private(set) var announcedCues: [SummaryJSON.AnnouncedCue] = []

    public init() {}

    public func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant) {
        switch effect {
        case .journal(.header):
            announcedCues = []
        case .alert(.cue(let type, let stage, let d, let name)):
            guard let index = core.screen.navigation.cue?.index, let course = core.course, index < course.cues.count,
                  !announcedCues.contains(where: { $0.index == index }), let start = core.builder?.startInstant else { return }
            announcedCues.append(SummaryJSON.AnnouncedCue(index: index, alongM: course.cues[index].alongM, type: type, name: name,
                                                          stage: stage, beforeM: Double(d),
                                                          atElapsedMs: now.advanced(byMs: core.instantOffsetMs).milliseconds(since: start)))
        case .rideFinished:
            lastFinishedJSON = SummaryJSON.make(core, at: now, cues: announcedCues)
        default:
            break
        }
    }

    /// summary.json of the ride in progress (or the last).
    public func current(_ core: AppCore, at now: MonotonicInstant) -> String? { SummaryJSON.make(core, at: now, cues: announcedCues) }
}
