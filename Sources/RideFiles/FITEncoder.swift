import RideModel

/// Encodes a ride as a FIT activity file (wire-formats.md §3, "Summary Last" order):
///
/// file_id · file_creator · device_info (unit, then each sensor) · hr_zone/power_zone · event timer start ·
/// [record (1 Hz) · hrv · event timer stop/start (pause/resume, gap) · lap + time_in_zone]… ·
/// event timer stop_all · last lap + time_in_zone · session + time_in_zone · activity.
///
/// Every message carries a normal header (no compressed timestamps); timestamps never decrease.
/// A recovery gap is written as a timer stop at the gap's start and a timer start at its end.
public enum FITEncoder {
    // Local message types.
    static let lFileID = 0, lDevice = 1, lEvent = 2, lRecord = 3, lHRV = 4, lLap = 5, lSession = 6,
               lActivity = 7, lHRZone = 8, lPowerZone = 9, lTimeInZone = 10, lFileCreator = 11, lUnitBattery = 12, lRadarEvent = 13,
               lCourse = 14
    /// RR intervals per hrv message (Garmin writes 5).
    public static let rrPerMessage = 5
    /// Bytes reserved per record row (upper bound of a record message with every field).
    static let recordBytesMax = 64
    /// Bytes of an event message (header + 11), a lap with zone arrays and its time_in_zone
    /// (upper bound), a device_info.
    static let eventBytes = 12, lapBytesMax = 400, deviceInfoBytes = 48

    // Profile values.
    enum Event: UInt8 { case timer = 0, offCourse = 7, session = 8, lap = 9, activity = 26, userMarker = 32, radarThreatAlert = 75 }
    enum EventType: UInt8 { case start = 0, stop = 1, marker = 3, stopAll = 4 }
    static let manufacturerDevelopment: UInt16 = 255
    /// Bytes of the course message's name (UTF-8, cut at a character).
    static let courseNameBytes = 64

    /// The record fields written, in order, for the quantities a ride has.
    struct RecordLayout {
        var quantities: [Quantity] = []
        var hasPosition = false
        var hasBalance = false

        init(_ ride: RideExport) {
            let order: [Quantity] = [.heartRate, .cadence, .distance, .speed, .power, .altitude, .grade, .temperature,
                                     .torqueEffectivenessLeft, .torqueEffectivenessRight,
                                     .pedalSmoothnessLeft, .pedalSmoothnessRight]
            for q in order where ride.present[q.index] { quantities.append(q) }
            hasPosition = ride.present[Quantity.latitude.index] && ride.present[Quantity.longitude.index]
            hasBalance = ride.present[Quantity.pedalBalanceRight.index]
        }

        var fields: [FITFieldDefinition] {
            var f = [FITFieldDefinition(253, .uint32)]
            if hasPosition { f += [FITFieldDefinition(0, .sint32), FITFieldDefinition(1, .sint32)] }
            for q in quantities {
                switch q {
                case .heartRate: f.append(FITFieldDefinition(3, .uint8))
                case .cadence: f.append(FITFieldDefinition(4, .uint8))
                case .distance: f.append(FITFieldDefinition(5, .uint32))
                case .speed: f += [FITFieldDefinition(6, .uint16), FITFieldDefinition(73, .uint32)] // + enhanced_speed
                case .power: f.append(FITFieldDefinition(7, .uint16))
                case .altitude: f += [FITFieldDefinition(2, .uint16), FITFieldDefinition(78, .uint32)] // + enhanced_altitude
                case .grade: f.append(FITFieldDefinition(9, .sint16))
                case .temperature: f.append(FITFieldDefinition(13, .sint8))
                case .torqueEffectivenessLeft: f.append(FITFieldDefinition(43, .uint8))
                case .torqueEffectivenessRight: f.append(FITFieldDefinition(44, .uint8))
                case .pedalSmoothnessLeft: f.append(FITFieldDefinition(45, .uint8))
                case .pedalSmoothnessRight: f.append(FITFieldDefinition(46, .uint8))
                default: break
                }
            }
            if hasBalance { f.append(FITFieldDefinition(30, .uint8)) }
            return f
        }
    }

    /// Semicircles from degrees.
    public static func semicircles(_ degrees: Double?) -> Int32? {
        guard let d = degrees, d.isFinite, d >= -180, d < 180 else { return nil }
        return Int32(clamping: Int64((d * 2_147_483_648.0 / 180).rounded(.towardZero))) // as Garmin's SDK
    }

    /// Encodes the ride rebuilt from `records`.
    public static func encode(records: [RideRecord]) throws(RideFileError) -> [UInt8] {
        encode(try RideExport(records: records))
    }

    public static func encode(_ ride: RideExport) -> [UInt8] {
        let layout = RecordLayout(ride)
        let b = ride.builder
        let settings = ride.header.settings
        let hrZones = settings.heartRateZones
        let powerZones = settings.powerZones
        // One buffer for the whole file: an upper bound of every message's size, so it never grows.
        var w = FITWriter(capacityBytes: 4096 + ride.rowCount * recordBytesMax + ride.rrSeconds.count * (2 * rrPerMessage + 1)
                              + b.events.count * 2 * eventBytes + b.laps.count * lapBytesMax + ride.sensors.count * deviceInfoBytes
                              + 2 * CourseMetadata.periodsMax * eventBytes + courseNameBytes + 16)
        let startTime = ride.fitTime(ride.startInstant)

        // file_id
        w.define(local: lFileID, global: 0, fields: [FITFieldDefinition(0, .enumeration), FITFieldDefinition(1, .uint16),
                                                      FITFieldDefinition(2, .uint16), FITFieldDefinition(3, .uint32z),
                                                      FITFieldDefinition(4, .uint32)])
        w.begin(local: lFileID)
        w.u8(4); w.u16(manufacturerDevelopment); w.u16(ride.product); w.u32z(ride.serialNumber); w.u32(startTime)
        w.end()

        // file_creator: the version of the software that wrote this file (ProjectVersion).
        w.define(local: lFileCreator, global: 49, fields: [FITFieldDefinition(0, .uint16)])
        w.begin(local: lFileCreator); w.u16(ProjectVersion.fitSoftwareVersion); w.end()

        // device_info: the unit (index 0, local source), then every sensor
        w.define(local: lDevice, global: 23, fields: [
            FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .uint8), FITFieldDefinition(1, .uint8),
            FITFieldDefinition(2, .uint16), FITFieldDefinition(3, .uint32z), FITFieldDefinition(4, .uint16),
            FITFieldDefinition(5, .uint16), FITFieldDefinition(11, .uint8), FITFieldDefinition(32, .uint8),
            FITFieldDefinition(21, .uint16z), FITFieldDefinition(22, .enumeration), FITFieldDefinition(25, .enumeration),
            FITFieldDefinition(27, .string, count: 20),
        ])
        w.begin(local: lDevice)
        w.u32(startTime); w.u8(0); w.u8(0xFF); w.u16(manufacturerDevelopment); w.u32z(ride.serialNumber); w.u16(ride.product)
        // The version that recorded the ride (journaled at its start), else this one.
        w.u16(ride.softwareVersionHundredths ?? ProjectVersion.fitSoftwareVersion); w.u8(0xFF); w.u8(0xFF); w.u16z(nil); w.u8(0xFF); w.u8(5) // local
        w.string(ride.metadataValue(RideMetadataKey.deviceName) ?? "bikecomputer", sizeBytes: 20)
        w.end()
        // The unit's own battery when the ride started (docs/power.md).
        writeUnitBattery(&w, ride, key: DeviceBattery.atStartKey, at: startTime)
        for (i, s) in ride.sensors.prefix(250).enumerated() {
            w.begin(local: lDevice)
            w.u32(startTime); w.u8(UInt8(i + 1)); w.u8(deviceType(s))
            w.u16(s.manufacturer ?? 0xFFFF); w.u32z(s.source == .ble ? s.serialNumber : s.antDeviceNumber.map(UInt32.init))
            w.u16(s.product ?? 0xFFFF); w.u16(0xFFFF)
            w.u8(batteryStatus(s.batteryPercent)); w.u8(s.batteryPercent.map(Double.init))
            w.u16z(s.antDeviceNumber); w.u8(s.source == .ant ? 1 : 0xFF); w.u8(s.source == .ant ? 1 : 3)
            w.string(s.name ?? s.kind.rawValue, sizeBytes: 20)
            w.end()
        }

        // The course the ride followed (docs/navigation.md): a course message with its name.
        if let name = ride.metadataValue(CourseMetadata.nameKey), !name.isEmpty {
            w.define(local: lCourse, global: 31, fields: [FITFieldDefinition(4, .enumeration), FITFieldDefinition(5, .string, count: courseNameBytes)])
            w.begin(local: lCourse); w.u8(2); w.string(name, sizeBytes: courseNameBytes); w.end()
        }
        // Off-course periods as off_course events (start, and stop with the farthest distance,
        // m, as data), merged into the time line below.
        var offCourse: [(instant: MonotonicInstant, start: Bool, data: UInt32)] = []
        for p in ride.metadataValue(CourseMetadata.offCourseKey).map(CourseMetadata.decode) ?? [] {
            let s = min(max(ride.startInstant, ride.startInstant.advanced(byMs: p.startMs)), ride.stopInstant)
            let e = min(max(s, ride.startInstant.advanced(byMs: p.endMs)), ride.stopInstant)
            offCourse.append((s, true, p.wrongWay ? 1 : 0))
            offCourse.append((e, false, UInt32(clamping: Int(p.maxDistanceM.rounded()))))
        }
        offCourse.sort { ($0.instant, $0.start ? 1 : 0) < ($1.instant, $1.start ? 1 : 0) }

        // zones
        if let z = hrZones {
            w.define(local: lHRZone, global: 8, fields: [FITFieldDefinition(254, .uint16), FITFieldDefinition(1, .uint8)])
            for i in 0..<z.zoneCount {
                w.begin(local: lHRZone); w.u16(UInt16(i)); w.u8(zoneHigh(z, i, max: 254)); w.end()
            }
        }
        if let z = powerZones {
            w.define(local: lPowerZone, global: 9, fields: [FITFieldDefinition(254, .uint16), FITFieldDefinition(1, .uint16)])
            for i in 0..<z.zoneCount {
                w.begin(local: lPowerZone); w.u16(UInt16(i)); w.u16(zoneHigh(z, i, max: 65534)); w.end()
            }
        }
        var tizFields = [FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .uint16), FITFieldDefinition(1, .uint16)]
        if let z = hrZones { tizFields += [FITFieldDefinition(2, .uint32, count: z.zoneCount), FITFieldDefinition(6, .uint8, count: z.zoneCount)] }
        if let z = powerZones { tizFields += [FITFieldDefinition(5, .uint32, count: z.zoneCount), FITFieldDefinition(9, .uint16, count: z.zoneCount)] }
        let hasZones = hrZones != nil || powerZones != nil
        if hasZones { w.define(local: lTimeInZone, global: 216, fields: tizFields) }

        w.define(local: lEvent, global: 21, fields: [FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .enumeration),
                                                     FITFieldDefinition(1, .enumeration), FITFieldDefinition(3, .uint32),
                                                     FITFieldDefinition(4, .uint8)])
        if b.events.contains(where: { $0.kind == .radar }) {
            // radar_threat_alert events: threat level max (21), count in view (22), average and
            // maximum approach speed (23, 24; m/s × 10), and the same four packed into data (3) as
            // the profile's components of its radar_threat_alert subfield (a decoder expands data
            // over the fields: they must agree); event_group (4) the vehicles that came up (1–8),
            // + 128 when the rider was beeped. docs/rides.md.
            w.define(local: lRadarEvent, global: 21, fields: [FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .enumeration),
                                                              FITFieldDefinition(1, .enumeration), FITFieldDefinition(3, .uint32),
                                                              FITFieldDefinition(4, .uint8), FITFieldDefinition(21, .enumeration),
                                                              FITFieldDefinition(22, .uint8), FITFieldDefinition(23, .uint8),
                                                              FITFieldDefinition(24, .uint8)])
        }
        w.define(local: lRecord, global: 20, fields: layout.fields)
        if !ride.rrSeconds.isEmpty {
            w.define(local: lHRV, global: 78, fields: [FITFieldDefinition(0, .uint16, count: rrPerMessage)])
        }
        var lapFields = [FITFieldDefinition(254, .uint16), FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .enumeration),
                         FITFieldDefinition(1, .enumeration), FITFieldDefinition(2, .uint32), FITFieldDefinition(7, .uint32),
                         FITFieldDefinition(8, .uint32), FITFieldDefinition(9, .uint32), FITFieldDefinition(13, .uint16),
                         FITFieldDefinition(14, .uint16), FITFieldDefinition(15, .uint8), FITFieldDefinition(16, .uint8),
                         FITFieldDefinition(17, .uint8), FITFieldDefinition(18, .uint8), FITFieldDefinition(19, .uint16),
                         FITFieldDefinition(20, .uint16), FITFieldDefinition(33, .uint16), FITFieldDefinition(24, .enumeration),
                         FITFieldDefinition(25, .enumeration), FITFieldDefinition(52, .uint32)]
        if let z = hrZones { lapFields.append(FITFieldDefinition(57, .uint32, count: z.zoneCount)) }
        if let z = powerZones { lapFields.append(FITFieldDefinition(60, .uint32, count: z.zoneCount)) }
        lapFields += lapPositionFields
        w.define(local: lLap, global: 19, fields: lapFields)

        func event(_ instant: MonotonicInstant, _ e: Event, _ t: EventType, data: UInt32, group: UInt8 = 0) {
            w.begin(local: lEvent)
            w.u32(ride.fitTime(instant)); w.u8(e.rawValue); w.u8(t.rawValue); w.u32(data); w.u8(group)
            w.end()
        }
        func timeInZone(_ instant: MonotonicInstant, mesg: UInt16, index: Int, hr: ZoneTimes, power: ZoneTimes) {
            guard hasZones else { return }
            w.begin(local: lTimeInZone)
            w.u32(ride.fitTime(instant)); w.u16(mesg); w.u16(UInt16(index))
            if let z = hrZones {
                for i in 0..<z.zoneCount { w.u32(Double(hr[i]) / 1000, scale: 1000) }
                for i in 0..<z.zoneCount { w.u8(zoneHigh(z, i, max: 254)) }
            }
            if let z = powerZones {
                for i in 0..<z.zoneCount { w.u32(Double(power[i]) / 1000, scale: 1000) }
                for i in 0..<z.zoneCount { w.u16(zoneHigh(z, i, max: 65534)) }
            }
            w.end()
        }
        func lap(_ lap: Lap) {
            let end = lap.endInstant ?? ride.stopInstant
            w.begin(local: lLap)
            w.u16(UInt16(truncatingIfNeeded: lap.index)); w.u32(ride.fitTime(end)); w.u8(Event.lap.rawValue); w.u8(EventType.stop.rawValue)
            w.u32(ride.fitTime(lap.startInstant))
            summary(&w, lap.statistics, elapsedMs: end.milliseconds(since: lap.startInstant), np: lap.normalizedPower.normalizedPowerW)
            w.u8(lapTrigger(lap.trigger)); w.u8(2) // cycling
            w.u32(lap.statistics.movingTime.map { Double($0) / 1000 }, scale: 1000) // total_moving_time
            if hrZones != nil { for i in 0..<lap.heartRateZoneTimes.zoneCount { w.u32(Double(lap.heartRateZoneTimes[i]) / 1000, scale: 1000) } }
            if powerZones != nil { for i in 0..<lap.powerZoneTimes.zoneCount { w.u32(Double(lap.powerZoneTimes[i]) / 1000, scale: 1000) } }
            writeLapPositions(&w, ride, lap, end: end)
            w.end()
            timeInZone(end, mesg: 19, index: lap.index, hr: lap.heartRateZoneTimes, power: lap.powerZoneTimes)
        }

        // The time line: rows, hrv batches and events merged by instant (rows of a second first).
        let events = b.events
        var ei = 0, ri = 0, rr = 0, oi = 0
        var lapsWritten = 0
        var timerRunning = false
        let stop = ride.stopInstant
        while true {
            let rowAt = ri < ride.rowCount ? ride.rowInstant(ri) : nil
            let rrAt = rr < ride.rrInstantMs.count ? MonotonicInstant(milliseconds: ride.rrInstantMs[rr]) : nil
            let evAt = ei < events.count ? events[ei].instant : nil
            let offAt = oi < offCourse.count ? offCourse[oi].instant : nil
            // pick the earliest; ties: rows, then RR, then events, then off-course events
            var pick = 0
            var best: MonotonicInstant?
            if let r = rowAt { best = r; pick = 1 }
            if let r = rrAt, best == nil || r < best! { best = r; pick = 2 }
            if let e = evAt, best == nil || e < best! { best = e; pick = 3 }
            if let o = offAt, best == nil || o < best! { best = o; pick = 4 }
            if best == nil { break }
            switch pick {
            case 4:
                let o = offCourse[oi]
                oi += 1
                event(o.instant, .offCourse, o.start ? .start : .stop, data: o.data)
            case 1:
                writeRecord(&w, ride, layout, ri)
                ri += 1
            case 2:
                w.begin(local: lHRV)
                let second = (ride.rrInstantMs[rr] - ride.startInstant.milliseconds) / 1000
                var n = 0
                while n < rrPerMessage, rr < ride.rrInstantMs.count,
                      (ride.rrInstantMs[rr] - ride.startInstant.milliseconds) / 1000 == second {
                    w.u16(ride.rrSeconds[rr], scale: 1000)
                    rr += 1; n += 1
                }
                for _ in n..<rrPerMessage { w.u16(0xFFFF) }
                w.end()
            default:
                let e = events[ei]
                ei += 1
                switch e.kind {
                case .start:
                    event(e.instant, .timer, .start, data: 0); timerRunning = true
                case .resume:
                    event(e.instant, .timer, .start, data: timerTrigger(e.trigger)); timerRunning = true
                case .pause:
                    event(e.instant, .timer, .stopAll, data: timerTrigger(e.trigger)); timerRunning = false
                case .gap:
                    // Visible in the file: the timer stops where the device went down and starts
                    // again when it came back. The records resume only after the gap.
                    if timerRunning {
                        event(e.instant, .timer, .stopAll, data: 0)
                        event(min(e.instant.advanced(byMs: max(0, e.value)), stop), .timer, .start, data: 0)
                    }
                case .lap:
                    if lapsWritten < b.laps.count { lap(b.laps[lapsWritten]); lapsWritten += 1 }
                case .stop:
                    if timerRunning { event(e.instant, .timer, .stopAll, data: 0) }
                    timerRunning = false
                case .marker:
                    // A rider's marker (water, food, note, segment) as a user_marker event: data is
                    // its value (ml, kcal), event_group its kind (docs/rides.md).
                    event(e.instant, .userMarker, .marker, data: UInt32(clamping: max(0, e.value)), group: e.markerKind.rawValue)
                case .radar:
                    guard let r = RadarAlertRecord(value: e.value) else { break }
                    w.begin(local: lRadarEvent)
                    w.u32(ride.fitTime(e.instant)); w.u8(Event.radarThreatAlert.rawValue); w.u8(EventType.marker.rawValue)
                    w.u32(Self.fitRadarData(r)); w.u8(Self.fitRadarGroup(r))
                    w.u8(Self.fitThreatLevel(r.maxThreat)); w.u8(UInt8(r.vehiclesInView))
                    w.u8(r.averageClosingSpeedMps, scale: 10); w.u8(r.maxClosingSpeedMps, scale: 10)
                    w.end()
                }
            }
        }
        if timerRunning { event(stop, .timer, .stopAll, data: 0) }
        while lapsWritten < b.laps.count { lap(b.laps[lapsWritten]); lapsWritten += 1 }
        // ... and when it stopped.
        writeUnitBattery(&w, ride, key: DeviceBattery.atEndKey, at: ride.fitTime(stop))

        // session
        var sessionFields = [FITFieldDefinition(254, .uint16), FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .enumeration),
                             FITFieldDefinition(1, .enumeration), FITFieldDefinition(2, .uint32), FITFieldDefinition(7, .uint32),
                             FITFieldDefinition(8, .uint32), FITFieldDefinition(9, .uint32), FITFieldDefinition(14, .uint16),
                             FITFieldDefinition(15, .uint16), FITFieldDefinition(16, .uint8), FITFieldDefinition(17, .uint8),
                             FITFieldDefinition(18, .uint8), FITFieldDefinition(19, .uint8), FITFieldDefinition(20, .uint16),
                             FITFieldDefinition(21, .uint16), FITFieldDefinition(34, .uint16),
                             FITFieldDefinition(5, .enumeration), FITFieldDefinition(6, .enumeration),
                             FITFieldDefinition(25, .uint16), FITFieldDefinition(26, .uint16), FITFieldDefinition(28, .enumeration),
                             FITFieldDefinition(59, .uint32)]
        if let z = hrZones { sessionFields.append(FITFieldDefinition(65, .uint32, count: z.zoneCount)) }
        if let z = powerZones { sessionFields.append(FITFieldDefinition(68, .uint32, count: z.zoneCount)) }
        sessionFields += sessionPositionFields
        w.define(local: lSession, global: 18, fields: sessionFields)
        let stopTime = ride.fitTime(stop)
        var rideStats = b.ride
        rideStats.timerTimeMs = b.timerTimeMs(at: stop)
        w.begin(local: lSession)
        w.u16(0); w.u32(stopTime); w.u8(Event.session.rawValue); w.u8(EventType.stop.rawValue); w.u32(startTime)
        summary(&w, rideStats, elapsedMs: b.elapsedTimeMs(at: stop), np: b.normalizedPowerW)
        let (sport, subSport) = sport(ride.header.activity)
        w.u8(sport); w.u8(subSport)
        w.u16(0); w.u16(UInt16(clamping: b.laps.count)); w.u8(0) // activity_end
        w.u32(rideStats.movingTime.map { Double($0) / 1000 }, scale: 1000) // total_moving_time
        if hrZones != nil { for i in 0..<b.heartRateZoneTimes.zoneCount { w.u32(Double(b.heartRateZoneTimes[i]) / 1000, scale: 1000) } }
        if powerZones != nil { for i in 0..<b.powerZoneTimes.zoneCount { w.u32(Double(b.powerZoneTimes[i]) / 1000, scale: 1000) } }
        writeSessionPositions(&w, ride, rideStats)
        w.end()
        timeInZone(stop, mesg: 18, index: 0, hr: b.heartRateZoneTimes, power: b.powerZoneTimes)

        // activity, last
        w.define(local: lActivity, global: 34, fields: [FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .uint32),
                                                        FITFieldDefinition(1, .uint16), FITFieldDefinition(2, .enumeration),
                                                        FITFieldDefinition(3, .enumeration), FITFieldDefinition(4, .enumeration),
                                                        FITFieldDefinition(5, .uint32)])
        w.begin(local: lActivity)
        w.u32(stopTime); w.u32(Double(rideStats.timerTimeMs) / 1000, scale: 1000); w.u16(1); w.u8(0)
        w.u8(Event.activity.rawValue); w.u8(EventType.stop.rawValue); w.u32(stopTime)
        w.end()
        return w.finish()
    }

    /// elapsed, timer, distance, avg/max speed, HR, cadence, power, NP (lap and session share these).
    static func summary(_ w: inout FITWriter, _ s: StatisticsSet, elapsedMs: Int64, np: Double?) {
        w.u32(Double(elapsedMs) / 1000, scale: 1000)
        w.u32(Double(s.timerTimeMs) / 1000, scale: 1000)
        w.u32(s[.distance].hasData ? s.distanceM : nil, scale: 100)
        w.u16(s.averageSpeedMps, scale: 1000)
        w.u16(s[.speed].max, scale: 1000)
        w.u8(s[.heartRate].average)
        w.u8(s[.heartRate].max)
        w.u8(s[.cadence].average)
        w.u8(s[.cadence].max)
        w.u16(s[.power].average)
        w.u16(s[.power].max)
        w.u16(np)
    }

    static func writeRecord(_ w: inout FITWriter, _ ride: RideExport, _ layout: RecordLayout, _ row: Int) {
        w.begin(local: lRecord)
        w.u32(ride.fitTime(ride.rowInstant(row)))
        if layout.hasPosition {
            let lat = ride.value(row, .latitude), lon = ride.value(row, .longitude)
            let both = lat != nil && lon != nil
            w.s32(both ? semicircles(lat) : nil); w.s32(both ? semicircles(lon) : nil)
        }
        for q in layout.quantities {
            let v = ride.value(row, q)
            switch q {
            case .heartRate, .cadence: w.u8(v)
            case .distance: w.u32(v, scale: 100)
            case .speed: w.u16(v, scale: 1000); w.u32(v, scale: 1000)
            case .power: w.u16(v)
            case .altitude: w.u16(v, scale: 5, offset: 500); w.u32(v, scale: 5, offset: 500)
            case .grade: w.s16(v, scale: 100)
            case .temperature: w.s8(v)
            default: w.u8(v, scale: 2) // TE / PS, percent ×2
            }
        }
        if layout.hasBalance {
            // left_right_balance: bit 7 set = the value is the right pedal's share in percent.
            if let r = ride.value(row, .pedalBalanceRight), r >= 0, r <= 100 { w.u8(0x80 | UInt8(r.rounded())) } else { w.u8(0xFF) }
        }
        w.end()
    }

    /// device_type: FIT's antplus_device_type (the ANT+ device type) or ble_device_type.
    static func deviceType(_ s: SensorIdentity) -> UInt8 {
        s.source == .ant ? s.kind.antDeviceType : s.kind.fitBleDeviceType
    }

    /// radar_threat_level_type: threat_none 1, threat_approaching 2, threat_approaching_fast 3.
    /// A radar_threat_alert event's data: its components radar_threat_level_max (bits 0–7),
    /// radar_threat_count (8–15), average and maximum approach speed (16–23, 24–31; m/s × 10,
    /// 0xFF unknown), as the FIT profile lays them out.
    static func fitRadarData(_ r: RadarAlertRecord) -> UInt32 {
        func speed(_ v: Double?) -> UInt32 { v.map { UInt32(min(254, max(0, ($0 * 10).rounded()))) } ?? 0xFF }
        return UInt32(fitThreatLevel(r.maxThreat)) | UInt32(r.vehiclesInView) << 8
            | speed(r.averageClosingSpeedMps) << 16 | speed(r.maxClosingSpeedMps) << 24
    }

    /// A radar_threat_alert event's event_group: the vehicles that came up (1–8), + 128 when the
    /// rider was beeped for them.
    static func fitRadarGroup(_ r: RadarAlertRecord) -> UInt8 {
        assert(r.vehiclesArrived >= 0 && r.vehiclesArrived <= RadarPicture.targetsMax)
        return UInt8(r.vehiclesArrived) | (r.alerted ? 0x80 : 0)
    }

    static func fitThreatLevel(_ t: RadarThreat) -> UInt8 {
        switch t {
        case .none: 1
        case .approaching: 2
        case .fastApproach: 3
        }
    }

    /// battery_status: good (2) > 50 %, ok (3) > 20 %, low (4) > 10 %, critical (5).
    /// The unit's battery as a device_info of the unit (device_index 0, the creator):
    /// battery_voltage (V, scale 256), battery_status, battery_level (%), when the ride
    /// journaled it under `key`. Defined at its first use.
    static func writeUnitBattery(_ w: inout FITWriter, _ ride: RideExport, key: String, at time: UInt32) {
        guard let text = ride.metadataValue(key), let battery = DeviceBattery(metadataValue: text) else { return }
        if !w.isDefined(local: lUnitBattery) {
            w.define(local: lUnitBattery, global: 23, fields: [FITFieldDefinition(253, .uint32), FITFieldDefinition(0, .uint8),
                                                               FITFieldDefinition(10, .uint16), FITFieldDefinition(11, .uint8),
                                                               FITFieldDefinition(32, .uint8)])
        }
        w.begin(local: lUnitBattery)
        w.u32(time); w.u8(0)
        w.u16(battery.voltageMv.map { Double($0) / 1000 }, scale: 256)
        w.u8(battery.fitBatteryStatus); w.u8(battery.percent.map(Double.init))
        w.end()
    }

    static func batteryStatus(_ percent: Int?) -> UInt8 {
        guard let p = percent else { return 0xFF }
        return p > 50 ? 2 : p > 20 ? 3 : p > 10 ? 4 : 5
    }

    /// timer_trigger: manual 0, auto 1.
    static func timerTrigger(_ t: Trigger) -> UInt32 { t == .auto ? 1 : 0 }

    /// lap_trigger: manual 0, time 1, distance 2, session_end 7.
    static func lapTrigger(_ t: Trigger?) -> UInt8 {
        switch t {
        case .time: 1
        case .distance: 2
        case .sessionEnd: 7
        default: 0
        }
    }

    /// Highest value of zone `i`: one below the next boundary (a value on a boundary belongs to
    /// the zone above); the top zone has no upper bound and gets `max`.
    static func zoneHigh<T: FixedWidthInteger>(_ z: ZoneConfiguration, _ i: Int, max: T) -> T {
        guard i < z.boundaries.count else { return max }
        let v = (z.boundaries[i] - 1).rounded(.up)
        return v <= 0 ? 0 : v >= Double(max) ? max : T(v)
    }

    /// (sport, sub_sport) from the activity name: cycling (2) with road (7), indoor (6),
    /// mountain (8), gravel (46) or generic (0).
    static func sport(_ activity: String) -> (UInt8, UInt8) {
        let a = activity.lowercased()
        if a.contains("indoor") || a.contains("trainer") { return (2, 6) }
        if a.contains("mountain") || a.contains("mtb") { return (2, 8) }
        if a.contains("gravel") { return (2, 46) }
        if a.contains("road") { return (2, 7) }
        return (2, 0)
    }
}
