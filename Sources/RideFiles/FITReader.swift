import RideModel

/// One decoded FIT data message: its global number and its fields' raw values (before scale and
/// offset), invalid values left out. Array fields keep every valid element in `arrays`.
public struct FITMessage: Sendable, Hashable {
    public var global: UInt16
    public var values: [UInt8: Double] = [:]
    public var arrays: [UInt8: [Double]] = [:]
    public var strings: [UInt8: String] = [:]

    public init(global: UInt16) { self.global = global }

    public var timestamp: UInt32? { values[253].flatMap { UInt32(exactly: $0) } }

    /// Field `n` with the profile's scale and offset applied.
    public func value(_ n: UInt8, scale: Double = 1, offset: Double = 0) -> Double? {
        values[n].map { $0 / scale - offset }
    }
}

/// A FIT file decoded into its data messages, in file order.
public struct FITFile: Sendable {
    /// Definitions a file may hold at once (one per local type) and fields per definition.
    public static let localTypesMax = 16
    public static let messagesMax = 2_000_000

    public var protocolVersion: UInt8
    public var profileVersion: UInt16
    public var messages: [FITMessage] = []
    /// Whether the 14-byte header's CRC was present and matched (nil: 12-byte header or CRC 0).
    public var headerCRCMatched: Bool?

    public func messages(_ global: UInt16) -> [FITMessage] { messages.filter { $0.global == global } }

    struct FieldDef { var number: UInt8; var size: Int; var baseType: UInt8 }
    struct Definition { var global: UInt16; var bigEndian: Bool; var fields: [FieldDef]; var developerBytes: Int }

    /// What a damaged file lost, when it was read with `recover: true`: why the reading stopped
    /// (or that the CRC did not match), and at which byte. Nil for an intact file.
    public var damage: String?
    /// The messages read before the damage (all of them for an intact file).
    public var bytesRead: Int = 0

    /// Decodes `bytes` (a whole file). Checks the header, data size and file CRC; a definition
    /// missing for a data message, a truncated message, a definition whose architecture byte is
    /// neither 0 nor 1, or a CRC mismatch is `.malformed`.
    ///
    /// With `recover: true` a damaged file (a CRC mismatch, a data size past the end, a damaged
    /// message) gives the messages read before the damage, and `damage` says what was wrong —
    /// as a rider wants a ride back from a file whose end was garbled. The header must be intact.
    ///
    /// At most `messagesMax` data messages are read (normal and compressed-timestamp headers
    /// alike: a compressed-timestamp message of a definition without fields is one byte).
    public init(bytes: [UInt8], recover: Bool = false, messagesMax: Int = FITFile.messagesMax) throws(RideFileError) {
        guard bytes.count >= 12 else { throw .malformed("shorter than a FIT header") }
        let headerSize = Int(bytes[0])
        guard headerSize == 12 || headerSize == 14, bytes.count >= headerSize + 2 else { throw .malformed("header size \(bytes[0]) is not 12 or 14") }
        guard bytes[8] == 0x2E, bytes[9] == 0x46, bytes[10] == 0x49, bytes[11] == 0x54 else { throw .malformed("no .FIT signature") }
        protocolVersion = bytes[1]
        profileVersion = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        let dataSize = Int(UInt32(bytes[4]) | UInt32(bytes[5]) << 8 | UInt32(bytes[6]) << 16 | UInt32(bytes[7]) << 24)
        var end = headerSize + dataSize
        if headerSize == 14 {
            let stored = UInt16(bytes[12]) | UInt16(bytes[13]) << 8
            headerCRCMatched = stored == 0 ? nil : stored == FITCRC.compute(bytes[0..<12])
        }
        if end + 2 > bytes.count {
            guard recover else { throw .malformed("data size \(dataSize) runs past the end of the file (truncated?)") }
            damage = "data size \(dataSize) runs past the end of the file (truncated)"
            end = bytes.count
        } else {
            let storedCRC = UInt16(bytes[end]) | UInt16(bytes[end + 1]) << 8
            if FITCRC.compute(bytes[0..<end]) != storedCRC {
                guard recover else { throw .malformed("file CRC mismatch") }
                damage = "file CRC mismatch"
            }
        }
        do {
            try decode(bytes, from: headerSize, to: end, messagesMax: messagesMax)
        } catch {
            guard recover else { throw error }
            damage = (damage.map { $0 + "; " } ?? "") + "\(Self.reason(error)) at byte \(bytesRead)"
        }
    }

    static func reason(_ e: RideFileError) -> String {
        if case .malformed(let why) = e { return why }
        return e.description
    }

    /// Decodes the messages in bytes[start..<end]; `bytesRead` follows the last whole message.
    mutating func decode(_ bytes: [UInt8], from start: Int, to end: Int, messagesMax: Int) throws(RideFileError) {
        var defs = [Definition?](repeating: nil, count: Self.localTypesMax)
        var pos = start
        bytesRead = start
        var lastTimestamp: UInt32 = 0
        while pos < end {
            bytesRead = pos
            let h = bytes[pos]; pos += 1
            if h & 0x80 != 0 {
                // compressed timestamp header
                let local = Int((h >> 5) & 0x3)
                let offset = UInt32(h & 0x1F)
                var ts = (lastTimestamp & ~0x1F) + offset
                if offset < (lastTimestamp & 0x1F) { ts &+= 0x20 }
                lastTimestamp = ts
                guard let d = defs[local] else { throw .malformed("data for undefined local message \(local)") }
                var m = try Self.readData(bytes, &pos, end, d)
                m.values[253] = Double(ts)
                guard messages.count < messagesMax else { throw .malformed("more than \(messagesMax) messages") }
                messages.append(m)
            } else if h & 0x40 != 0 {
                let local = Int(h & 0x0F)
                guard pos + 5 <= end else { throw .malformed("truncated definition") }
                // The architecture byte: 0 little-endian, 1 big-endian; anything else is damage
                // (read as either, the rest of the file would be garbage taken for data).
                guard bytes[pos + 1] <= 1 else { throw .malformed("definition with architecture byte \(bytes[pos + 1]) (not 0 or 1)") }
                let big = bytes[pos + 1] == 1
                let global = big ? UInt16(bytes[pos + 2]) << 8 | UInt16(bytes[pos + 3]) : UInt16(bytes[pos + 2]) | UInt16(bytes[pos + 3]) << 8
                let n = Int(bytes[pos + 4]); pos += 5
                guard pos + 3 * n <= end else { throw .malformed("truncated field definitions") }
                var fields: [FieldDef] = []
                fields.reserveCapacity(n)
                for i in 0..<n { fields.append(FieldDef(number: bytes[pos + 3 * i], size: Int(bytes[pos + 3 * i + 1]), baseType: bytes[pos + 3 * i + 2])) }
                pos += 3 * n
                var devBytes = 0
                if h & 0x20 != 0 {
                    guard pos < end else { throw .malformed("truncated developer field count") }
                    let dn = Int(bytes[pos]); pos += 1
                    guard pos + 3 * dn <= end else { throw .malformed("truncated developer fields") }
                    for i in 0..<dn { devBytes += Int(bytes[pos + 3 * i + 1]) }
                    pos += 3 * dn
                }
                defs[local] = Definition(global: global, bigEndian: big, fields: fields, developerBytes: devBytes)
            } else {
                let local = Int(h & 0x0F)
                guard let d = defs[local] else { throw .malformed("data for undefined local message \(local)") }
                let m = try Self.readData(bytes, &pos, end, d)
                if let t = m.timestamp { lastTimestamp = t }
                guard messages.count < messagesMax else { throw .malformed("more than \(messagesMax) messages") }
                messages.append(m)
            }
        }
        bytesRead = pos
    }

    static func readData(_ bytes: [UInt8], _ pos: inout Int, _ end: Int, _ d: Definition) throws(RideFileError) -> FITMessage {
        var m = FITMessage(global: d.global)
        for f in d.fields {
            guard pos + f.size <= end else { throw .malformed("truncated data message") }
            defer { pos += f.size }
            let bt = f.baseType & 0x1F
            let (elemSize, signed, invalid): (Int, Bool, UInt64) = switch bt {
            case 0x00, 0x02, 0x0D: (1, false, 0xFF)
            case 0x01: (1, true, 0x7F)
            case 0x0A: (1, false, 0)
            case 0x03: (2, true, 0x7FFF)
            case 0x04: (2, false, 0xFFFF)
            case 0x0B: (2, false, 0)
            case 0x05: (4, true, 0x7FFF_FFFF)
            case 0x06: (4, false, 0xFFFF_FFFF)
            case 0x0C: (4, false, 0)
            case 0x0E: (8, true, 0x7FFF_FFFF_FFFF_FFFF)
            case 0x0F: (8, false, 0xFFFF_FFFF_FFFF_FFFF)
            case 0x10: (8, false, 0)
            case 0x07: (0, false, 0) // string
            default: (-1, false, 0)  // floats and unknown: skipped
            }
            if bt == 0x07 {
                var s: [UInt8] = []
                for i in 0..<f.size { let c = bytes[pos + i]; if c == 0 { break }; s.append(c) }
                if !s.isEmpty { m.strings[f.number] = String(decoding: s, as: UTF8.self) }
                continue
            }
            guard elemSize > 0, f.size % elemSize == 0 else { continue } // size mismatch: treat as bytes, skip
            let count = f.size / elemSize
            var elements: [Double] = []
            for e in 0..<count {
                var raw: UInt64 = 0
                for i in 0..<elemSize {
                    let b = UInt64(bytes[pos + e * elemSize + i])
                    raw |= d.bigEndian ? b << (8 * UInt64(elemSize - 1 - i)) : b << (8 * UInt64(i))
                }
                if raw == invalid { continue }
                var v = Double(raw)
                if signed {
                    let shift = UInt64(64 - 8 * elemSize)
                    v = Double(Int64(bitPattern: raw << shift) >> Int64(shift))
                }
                elements.append(v)
            }
            if count == 1 {
                if let v = elements.first { m.values[f.number] = v }
            } else if !elements.isEmpty {
                m.values[f.number] = elements[0]
                m.arrays[f.number] = elements
            }
        }
        guard pos + d.developerBytes <= end else { throw .malformed("truncated developer data") }
        pos += d.developerBytes
        return m
    }
}

/// What a FIT activity holds, in the units the app uses.
public struct FITActivity: Sendable {
    public struct Record: Sendable, Hashable {
        public var timestamp: UInt32
        public var heartRate: Double?, power: Double?, cadence: Double?, speedMps: Double?, distanceM: Double?
        public var latitude: Double?, longitude: Double?, altitudeM: Double?
    }
    public struct Event: Sendable, Hashable {
        public var timestamp: UInt32, event: UInt8, eventType: UInt8, data: UInt32?
    }
    /// A radar_threat_alert event (75): threat level as FIT counts it (1 none, 2 approaching, 3
    /// fast), vehicles in view, approach speeds (m/s), from the fields or else from data's
    /// components; this app also writes the vehicles that came up and whether the rider was beeped
    /// (event_group: vehicles + 128 when beeped), nil in other devices' files.
    public struct RadarAlert: Sendable, Hashable {
        public var timestamp: UInt32
        public var threatLevel: UInt8?, inView: Int?, vehiclesArrived: Int?, beeped: Bool?
        public var averageApproachMps: Double?, maxApproachMps: Double?
    }
    public struct Summary: Sendable, Hashable {
        public var timestamp: UInt32?, startTime: UInt32?
        public var elapsedS: Double?, timerS: Double?, distanceM: Double?
        public var avgSpeedMps: Double?, maxSpeedMps: Double?, avgHeartRate: Double?, maxHeartRate: Double?
        public var avgCadence: Double?, maxCadence: Double?, avgPowerW: Double?, maxPowerW: Double?
        /// lap_trigger (laps only): manual 0, time 1, distance 2, session_end 7, ...
        public var trigger: UInt8? = nil
        /// total_moving_time (lap 52, session 59), s.
        public var movingS: Double? = nil
        /// normalized_power (lap 33, session 34), W.
        public var normalizedPowerW: Double? = nil
    }

    public var records: [Record] = []
    public var events: [Event] = []
    public var radarAlerts: [RadarAlert] = []
    public var laps: [Summary] = []
    public var sessions: [Summary] = []
    /// Records left out because their timestamp lies outside the activity (after its end, or
    /// more than `recordsBeforeStartMaxS` before its start): a unit's clock glitch (an Edge 500
    /// wrote records dated two years ahead in the middle of a ride). The unit's own figures
    /// leave them out too.
    public var recordsOutsideActivity = 0
    /// Records this long before the activity's start still belong to it (units that record
    /// before the timer starts).
    public static let recordsBeforeStartMaxS: UInt32 = 3_600

    /// file_id.type: 4 activity, 6 course, 8 locations (device files), ...; nil when not written.
    public var fileType: UInt8?

    /// What a file of `fileType` is, for a message saying why it cannot be replayed.
    public static func fileTypeName(_ t: UInt8) -> String {
        switch t {
        case 1: "a device description"
        case 2: "a settings file"
        case 3: "a sport settings file"
        case 5: "a workout"
        case 6: "a course (a planned route, not a recording)"
        case 7: "a schedule"
        case 8: "a locations file (saved places)"
        case 9: "a weight file"
        case 10: "a totals file"
        case 11: "a goals file"
        case 14: "a blood-pressure file"
        case 15: "a monitoring file"
        case 20: "an activity summary"
        case 28: "a daily monitoring file"
        case 32: "a segment"
        case 34: "a segment list"
        default: "a FIT file of type \(t)"
        }
    }

    public init(_ file: FITFile) {
        var activityTimestamp: UInt32?
        for m in file.messages {
            switch m.global {
            case 0:
                if fileType == nil { fileType = m.values[0].flatMap { UInt8(exactly: $0) } }
            case 34:
                activityTimestamp = m.timestamp
            case 20:
                guard let t = m.timestamp else { continue }
                let semi = 180.0 / 2_147_483_648.0
                records.append(Record(timestamp: t, heartRate: m.value(3), power: m.value(7), cadence: m.value(4),
                                      speedMps: m.value(73, scale: 1000) ?? m.value(6, scale: 1000),
                                      distanceM: m.value(5, scale: 100),
                                      latitude: m.value(0).map { $0 * semi }, longitude: m.value(1).map { $0 * semi },
                                      altitudeM: m.value(78, scale: 5, offset: 500) ?? m.value(2, scale: 5, offset: 500)))
            case 21:
                guard let t = m.timestamp, let e = m.values[0].flatMap({ UInt8(exactly: $0) }),
                      let et = m.values[1].flatMap({ UInt8(exactly: $0) }) else { continue }
                events.append(Event(timestamp: t, event: e, eventType: et, data: m.values[3].flatMap { UInt32(exactly: $0) }))
                if e == 75 {
                    // data's components: level, count, average and maximum speed (one byte each).
                    let data = m.values[3].flatMap { UInt32(exactly: $0) }
                    func part(_ k: UInt32) -> Double? {
                        guard let d = data else { return nil }
                        let v = (d >> (8 * k)) & 0xFF
                        return v == 0xFF ? nil : Double(v)
                    }
                    let group = m.values[4].flatMap { UInt8(exactly: $0) }
                    let arrived = group.map { Int($0 & 0x7F) }.flatMap { $0 >= 1 && $0 <= 8 ? $0 : nil }
                    radarAlerts.append(RadarAlert(timestamp: t,
                                                  threatLevel: (m.values[21] ?? part(0)).flatMap { UInt8(exactly: $0) },
                                                  inView: (m.values[22] ?? part(1)).map { Int($0) },
                                                  vehiclesArrived: arrived, beeped: arrived == nil ? nil : group.map { $0 & 0x80 != 0 },
                                                  averageApproachMps: m.value(23, scale: 10) ?? part(2).map { $0 / 10 },
                                                  maxApproachMps: m.value(24, scale: 10) ?? part(3).map { $0 / 10 }))
                }
            case 19, 18:
                let s = m.global == 19 // lap and session field numbers differ above 9
                let sum = Summary(timestamp: m.timestamp, startTime: m.values[2].flatMap { UInt32(exactly: $0) },
                                  elapsedS: m.value(7, scale: 1000), timerS: m.value(8, scale: 1000), distanceM: m.value(9, scale: 100),
                                  avgSpeedMps: m.value(s ? 13 : 14, scale: 1000), maxSpeedMps: m.value(s ? 14 : 15, scale: 1000),
                                  avgHeartRate: m.value(s ? 15 : 16), maxHeartRate: m.value(s ? 16 : 17),
                                  avgCadence: m.value(s ? 17 : 18), maxCadence: m.value(s ? 18 : 19),
                                  avgPowerW: m.value(s ? 19 : 20), maxPowerW: m.value(s ? 20 : 21))
                var summary = sum
                if s { summary.trigger = m.values[24].flatMap { UInt8(exactly: $0) } }
                summary.movingS = m.value(s ? 52 : 59, scale: 1000)
                summary.normalizedPowerW = m.value(s ? 33 : 34)
                if s { laps.append(summary) } else { sessions.append(summary) }
            default: break
            }
        }
        if let span = span(activityTimestamp: activityTimestamp) {
            let before = records.count
            let earliest = span.start >= Self.recordsBeforeStartMaxS ? span.start - Self.recordsBeforeStartMaxS : 0
            records.removeAll { $0.timestamp > span.end || $0.timestamp < earliest }
            recordsOutsideActivity = before - records.count
        }
    }

    /// The activity's span by its own messages (not its records): from its first timer start or
    /// session start to the latest of its timer events, laps, sessions (start + elapsed) and
    /// activity message. Nil when the file has none of them.
    func span(activityTimestamp: UInt32?) -> (start: UInt32, end: UInt32)? {
        var starts: [UInt32] = events.filter { $0.event == 0 && $0.eventType == 0 }.map(\.timestamp)
        starts += sessions.compactMap(\.startTime) + laps.compactMap(\.startTime)
        var ends: [UInt32] = events.filter { $0.event == 0 }.map(\.timestamp)
        ends += (laps + sessions).compactMap(\.timestamp)
        for s in laps + sessions {
            if let st = s.startTime, let el = s.elapsedS, el.isFinite, el >= 0, el < 1e7 { ends.append(st &+ UInt32(el.rounded(.up))) }
        }
        if let a = activityTimestamp { ends.append(a) }
        guard let end = ends.max() else { return nil }
        let start = starts.min() ?? records.map(\.timestamp).min() ?? end
        guard start <= end else { return nil }
        return (start, end)
    }
}

extension FITActivity {
    /// When the activity started: its first timer start; without timer events, its session's
    /// start_time when that is at or before the first record (a unit that starts its timer a
    /// second before its first record, as IpBike does); else its first record.
    public var startTimestamp: UInt32? {
        if let e = events.first(where: { $0.event == 0 && $0.eventType == 0 }) { return e.timestamp }
        let first = records.map(\.timestamp).min()
        if let st = sessions.compactMap(\.startTime).min(), let f = first, st <= f, f - st <= Self.sessionStartLeadMaxS { return st }
        return first
    }
    /// How far before its first record a session's start_time may be to be taken as the start.
    public static let sessionStartLeadMaxS: UInt32 = 60

    /// The activity as ride records, for replaying a recorded ride through the app (the
    /// simulator): a header anchored at the first timer start, start/pause/resume from the timer
    /// events (auto when the event's data says so), a lap at the end of every lap but the last,
    /// 1 Hz samples from the records, and the stop at the session's end.
    ///
    /// Instants are milliseconds since the first timer start (or the first record).
    public func rideRecords(rideID: RideID, settings: RideSettings = RideSettings(), activity: String = "cycling") -> [RideRecord] {
        let t0 = startTimestamp ?? 0
        func at(_ t: UInt32) -> MonotonicInstant { MonotonicInstant(milliseconds: (Int64(t) - Int64(t0)) * 1000) }
        let wall = WallClockTime(unixMs: (Int64(t0) + FITTime.unixEpochOffsetSeconds) * 1000, trusted: true)
        // The unit's own record spacing is bridged (a sparsely recording unit counted the time in
        // between; docs/statistics.md).
        var settings = settings
        var longestGap: Int64 = 1
        for (a, b) in zip(records, records.dropFirst()) where b.timestamp > a.timestamp {
            longestGap = max(longestGap, Int64(b.timestamp) - Int64(a.timestamp))
        }
        settings.sampleHoldLimitMs = max(settings.sampleHoldLimitMs, min(3_600, longestGap + 1) * 1000)
        var out: [RideRecord] = [.header(RideHeader(rideID: rideID, anchor: WallClockAnchor(monotonic: .zero, wall: wall),
                                                    settings: settings, activity: activity))]
        out.reserveCapacity(1 + records.count * 6 + events.count + laps.count)
        // Timeline items: (time, order within the second, kind); starts/resumes before the
        // second's record, pauses, laps and the stop after it.
        enum Item { case timer(start: Bool, auto: Bool), lap(UInt8?), record(Int), stop }
        var items: [(t: UInt32, order: Int, seq: Int, item: Item)] = []
        for e in events where e.event == 0 && (e.eventType == 0 || e.eventType == 1 || e.eventType == 4) && e.timestamp >= t0 {
            let start = e.eventType == 0
            items.append((e.timestamp, start ? 0 : 2, items.count, .timer(start: start, auto: e.data == 1)))
        }
        // Without timer events the ride starts at `startTimestamp` (the session's start_time may
        // be a second before the first record).
        if !events.contains(where: { $0.event == 0 && $0.eventType == 0 }), !records.isEmpty {
            items.append((t0, 0, items.count, .timer(start: true, auto: false)))
        }
        for (i, r) in records.enumerated() where r.timestamp >= t0 { items.append((r.timestamp, 1, items.count, .record(i))) }
        for lap in laps.dropLast() { if let t = lap.timestamp { items.append((t, 3, items.count, .lap(lap.trigger))) } }
        let last = records.last?.timestamp ?? t0
        var end = last
        if let s = sessions.last, let st = s.startTime, let el = s.elapsedS, el.isFinite, el >= 0, el < 1e7 { end = max(end, st &+ UInt32(el.rounded(.down))) }
        else if let s = sessions.last?.timestamp { end = max(end, s) }
        items.append((end, 4, items.count, .stop))
        items.sort { ($0.t, $0.order, $0.seq) < ($1.t, $1.order, $1.seq) }

        var started = false, running = false, stopped = false
        var pendingLap: Trigger? // a lap that ended while paused starts at the resume
        // FIT distance is the activity's: 0 at the timer start, frozen while stopped. The reading
        // at the start and at every resume is the base of the next increment.
        let hasDistance = records.contains { $0.distanceM != nil }
        var lastDistance: Double? = records.contains { $0.timestamp < t0 && $0.distanceM != nil } ? nil : (hasDistance ? 0 : nil)
        for it in items where !stopped {
            let instant = at(it.t)
            switch it.item {
            case .timer(let start, let auto):
                if start && !started {
                    out.append(.event(RideEvent(.start, at: instant))); started = true; running = true
                    if let d = lastDistance { out.append(.sample(Sample(.distance, d, at: instant))) }
                } else if start && !running {
                    out.append(.event(RideEvent(.resume, at: instant, trigger: auto ? .auto : .manual))); running = true
                    if let d = lastDistance { out.append(.sample(Sample(.distance, d, at: instant))) }
                    if let t = pendingLap { out.append(.event(RideEvent(.lap, at: instant, trigger: t))); pendingLap = nil }
                } else if !start && running && started {
                    out.append(.event(RideEvent(.pause, at: instant, trigger: auto ? .auto : .manual))); running = false
                }
            case .record(let i):
                if !started {
                    out.append(.event(RideEvent(.start, at: instant))); started = true; running = true
                    if let d = lastDistance, records[i].distanceM != nil { out.append(.sample(Sample(.distance, d, at: instant))) }
                }
                let r = records[i]
                if let d = r.distanceM { lastDistance = d }
                func add(_ q: Quantity, _ v: Double?) { if let v { out.append(.sample(Sample(q, v, at: instant))) } }
                add(.heartRate, r.heartRate); add(.power, r.power); add(.cadence, r.cadence)
                add(.speed, r.speedMps); add(.distance, r.distanceM); add(.altitude, r.altitudeM)
                if let la = r.latitude, let lo = r.longitude { add(.latitude, la); add(.longitude, lo) }
            case .lap(let trigger):
                let t: Trigger = switch trigger { case 1: .time; case 2: .distance; default: .manual }
                if started && running { out.append(.event(RideEvent(.lap, at: instant, trigger: t))) } else if started { pendingLap = t }
            case .stop:
                if started { out.append(.event(RideEvent(.stop, at: instant))); stopped = true }
            }
        }
        if started { out.append(.finished(saved: true, at: at(end))) }
        return out
    }
}
