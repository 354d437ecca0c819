/// Settings of one ride that the builder needs.
public struct RideSettings: Sendable, Hashable {
    /// The default bridging limit: one missed 1 Hz record (BLE timing jitter) is bridged, a
    /// longer silence is not.
    public static let defaultSampleHoldLimitMs: Int64 = 2_000
    /// The period a value stands for on its own: one 1 Hz record.
    public static let defaultSamplePeriodMs: Int64 = 1_000
    /// Below this speed the rider is not moving (moving time): 1 m/s = 3.6 km/h.
    public static let defaultMovingSpeedMps = 1.0

    /// Functional threshold power, for intensity factor and training stress.
    public var ftpW: Double?
    public var heartRateZones: ZoneConfiguration?
    public var powerZones: ZoneConfiguration?
    public var intervalMs: Int64
    public var intervalBucketsMax: Int
    /// The longest silence between two values of a quantity that is bridged: a value counts
    /// until the next value of its quantity when that comes within this limit (a missed record,
    /// or a recording unit's sparse "smart recording"); otherwise it counts for `samplePeriodMs`
    /// only, so a sensor that stops adds no value that never happened. Journaled in the header.
    public var sampleHoldLimitMs: Int64
    /// How long a value stands for when no next value bridges it (not journaled: always the
    /// default on the device).
    public var samplePeriodMs: Int64
    /// Moving time counts timer time with a speed at or above this (not journaled).
    public var movingSpeedMps: Double
    /// Laps kept (storage reserved up front).
    public var lapsMax: Int
    /// Events kept (storage reserved up front).
    public var eventsMax: Int

    public init(ftpW: Double? = nil,
                heartRateZones: ZoneConfiguration? = .defaultHeartRate,
                powerZones: ZoneConfiguration? = nil,
                intervalMs: Int64 = IntervalTable.defaultIntervalMs,
                intervalBucketsMax: Int = IntervalTable.defaultBucketsMax,
                sampleHoldLimitMs: Int64 = RideSettings.defaultSampleHoldLimitMs,
                samplePeriodMs: Int64 = RideSettings.defaultSamplePeriodMs,
                movingSpeedMps: Double = RideSettings.defaultMovingSpeedMps,
                lapsMax: Int = 500,
                eventsMax: Int = 8_192) {
        self.ftpW = ftpW
        self.heartRateZones = heartRateZones
        self.powerZones = powerZones
        self.intervalMs = intervalMs
        self.intervalBucketsMax = intervalBucketsMax
        self.sampleHoldLimitMs = sampleHoldLimitMs
        self.samplePeriodMs = samplePeriodMs
        self.movingSpeedMps = movingSpeedMps
        self.lapsMax = lapsMax
        self.eventsMax = eventsMax
    }

    /// Events a marker may not take: room kept for the pauses, resumes, laps, gaps and the stop
    /// of a ride whose marker allowance is used up.
    public var eventsReservedForLifecycle: Int { Swift.min(256, eventsMax / 4) }
}

/// One lap: its span, statistics and zone times.
public struct Lap: Sendable, Hashable {
    public var index: Int
    public var startInstant: MonotonicInstant
    /// Timer time of the ride when the lap began.
    public var startTimerMs: Int64
    public var endInstant: MonotonicInstant?
    /// What ended the lap (nil while open).
    public var trigger: Trigger?
    /// The lap's statistics. While the lap is open its `timerTimeMs` is complete up to the
    /// builder's last update (`RideBuilder.lapStatistics(_:at:)` gives it at any instant).
    public var statistics = StatisticsSet()
    public var heartRateZoneTimes: ZoneTimes
    public var powerZoneTimes: ZoneTimes
    /// Normalized power over the lap (seconds aligned to the ride's timer time).
    public var normalizedPower = NormalizedPowerAccumulator()

    public func elapsedMs(at now: MonotonicInstant) -> Int64 {
        (endInstant ?? now).milliseconds(since: startInstant)
    }
}

/// Why the builder did not take a sample or event.
public enum BuilderRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// Before start or after stop.
    case notCollecting
    /// Older than the newest value of the same quantity (or than the last event).
    case outOfOrder
    /// NaN or infinite.
    case notFinite
    /// The fixed lap or event storage is full.
    case capacityReached
    /// The event is not valid now (e.g. pause while paused). The session lifecycle refuses these
    /// first; the builder double-checks.
    case invalidEvent

    public var description: String {
        switch self {
        case .notCollecting: "the ride is not collecting (not started, or stopped)"
        case .outOfOrder: "older than what the ride already holds"
        case .notFinite: "not a finite number"
        case .capacityReached: "the ride's lap or event table is full; end the ride and start a new one"
        case .invalidEvent: "not valid in the ride's current state"
        }
    }
}

/// Collects samples and events of one ride and keeps its statistics (workout-model.md §2;
/// every figure is defined in docs/statistics.md).
///
/// Pure and O(1) per sample with no allocation after `init` (laps and events have reserved
/// storage). Averages are time-weighted over timer time. A value counts from its sample's
/// instant until the next sample of the same quantity when that comes within
/// `sampleHoldLimitMs` (bridged); a value not followed in time counts for `samplePeriodMs`
/// only. At a pause, lap edge or stop within the hold limit the value counts up to the edge.
/// Only samples taken while running count; a sample exactly at the instant a running stretch
/// ended (pause or stop) counts into extremes and distance, with no time weight.
public struct RideBuilder: Sendable {
    public let settings: RideSettings

    /// Metadata keys that set the zero-averaging convention of a quantity ("with_zeros" or
    /// "without_zeros"); journaled at the start so that recovery and export agree.
    public static let cadenceAveragingKey = "averages.cadence"
    public static let powerAveragingKey = "averages.power"

    public internal(set) var startInstant: MonotonicInstant?
    public internal(set) var stopInstant: MonotonicInstant?
    public internal(set) var isRunning = false
    /// The events in order.
    public internal(set) var events: [RideEvent] = []
    public internal(set) var metadata: [(key: String, value: String)] = []
    /// What a rear radar saw during the ride (its `.radar` events).
    public internal(set) var radar = RadarRideStatistics()

    /// The ride's statistics; `timerTimeMs` complete up to the last update (`statistics(at:)`).
    public internal(set) var ride = StatisticsSet()
    public internal(set) var laps: [Lap] = []
    public internal(set) var intervals: IntervalTable
    public internal(set) var normalizedPower = NormalizedPowerAccumulator()
    public internal(set) var heartRateZoneTimes: ZoneTimes
    public internal(set) var powerZoneTimes: ZoneTimes
    /// The zero-averaging convention of each quantity (Garmin's defaults: cadence without
    /// zeros, everything else with zeros).
    public internal(set) var zeroAveraging: [ZeroAveraging]

    /// Samples refused, by reason (counted, never silently dropped).
    public internal(set) var rejectedOutOfOrder: UInt64 = 0
    public internal(set) var rejectedNotFinite: UInt64 = 0
    /// Samples taken while paused or prepared (recorded elsewhere, not counted here).
    public internal(set) var uncountedSamples: UInt64 = 0

    // Held values, one per quantity: the value, the instant of its sample, how far it is weighed.
    @usableFromInline var heldValue: [Double]
    @usableFromInline var heldSampleAt: [MonotonicInstant]
    @usableFromInline var heldFrom: [MonotonicInstant]
    @usableFromInline var heldActive: [Bool]
    @usableFromInline var newestInstant: [MonotonicInstant]
    // Cumulative quantities: last reading and whether it can serve as the base of an increment
    // (taken in the current running stretch, or at the instant the last one ended).
    @usableFromInline var cumulativeLast: [Double]
    @usableFromInline var cumulativeBaseline: [Bool]

    // Timer bookkeeping: the instant the current running stretch began and the timer time then.
    @usableFromInline var runningSince = MonotonicInstant.zero
    @usableFromInline var timerMsAtRunningSince: Int64 = 0
    /// The instant the last running stretch ended (pause, gap or stop) while not running.
    @usableFromInline var stretchEnd: MonotonicInstant?
    /// Time-weighted figures are complete up to here (`advance(to:)`); older samples are refused.
    @usableFromInline var advancedTo = MonotonicInstant(milliseconds: .min)

    public init(settings: RideSettings = RideSettings()) {
        self.settings = settings
        intervals = IntervalTable(intervalMs: settings.intervalMs, bucketsMax: settings.intervalBucketsMax)
        heartRateZoneTimes = ZoneTimes(zoneCount: settings.heartRateZones?.zoneCount ?? 0)
        powerZoneTimes = ZoneTimes(zoneCount: settings.powerZones?.zoneCount ?? 0)
        let n = Quantity.countMax
        heldValue = Array(repeating: 0, count: n)
        heldSampleAt = Array(repeating: .zero, count: n)
        heldFrom = Array(repeating: .zero, count: n)
        heldActive = Array(repeating: false, count: n)
        newestInstant = Array(repeating: MonotonicInstant(milliseconds: .min), count: n)
        cumulativeLast = Array(repeating: 0, count: n)
        cumulativeBaseline = Array(repeating: false, count: n)
        zeroAveraging = Array(repeating: .includeZeros, count: n)
        laps.reserveCapacity(settings.lapsMax)
        events.reserveCapacity(settings.eventsMax)
        setZeroAveraging(.excludeZeros, for: .cadence)
    }

    // MARK: Conventions

    /// Sets whether the average of `q` leaves zeros out. Applies to the whole ride (ride, laps,
    /// intervals), also to what was collected before: the statistics keep both sums.
    public mutating func setZeroAveraging(_ z: ZeroAveraging, for q: Quantity) {
        zeroAveraging[q.index] = z
        ride.perQuantity[q.index].setZeroAveraging(z)
        for i in laps.indices { laps[i].statistics.perQuantity[q.index].setZeroAveraging(z) }
        intervals.setZeroAveraging(z, for: q)
    }

    /// The metadata value naming a convention ("with_zeros" / "without_zeros").
    public static func averagingValue(_ z: ZeroAveraging) -> String { z == .includeZeros ? "with_zeros" : "without_zeros" }

    public static func parseAveraging(_ text: String) -> ZeroAveraging? {
        switch text {
        case "with_zeros": .includeZeros
        case "without_zeros": .excludeZeros
        default: nil
        }
    }

    // MARK: Time

    public var lastEventInstant: MonotonicInstant? { events.last?.instant }

    /// Timer time (time spent running) at `now`.
    public func timerTimeMs(at now: MonotonicInstant) -> Int64 {
        guard startInstant != nil else { return 0 }
        return isRunning ? timerMsAtRunningSince + max(0, now.milliseconds(since: runningSince)) : timerMsAtRunningSince
    }

    /// Elapsed time = (stop or now) − start.
    public func elapsedTimeMs(at now: MonotonicInstant) -> Int64 {
        guard let start = startInstant else { return 0 }
        return (stopInstant ?? now).milliseconds(since: start)
    }

    /// Timer time of the current lap at `now`.
    public func lapTimerTimeMs(at now: MonotonicInstant) -> Int64 {
        guard let lap = laps.last else { return 0 }
        if lap.endInstant != nil { return lap.statistics.timerTimeMs }
        return timerTimeMs(at: now) - lap.startTimerMs
    }

    /// The ride's statistics with the timer time at `now` (distance, extremes and weighed
    /// averages as of the last update). No allocation: the arrays are shared, not copied.
    public func statistics(at now: MonotonicInstant) -> StatisticsSet {
        var s = ride
        s.timerTimeMs = timerTimeMs(at: now)
        return s
    }

    /// Lap `index`'s statistics with its timer time at `now` (fixed once the lap is closed).
    public func lapStatistics(_ index: Int, at now: MonotonicInstant) -> StatisticsSet {
        var s = laps[index].statistics
        if laps[index].endInstant == nil { s.timerTimeMs = timerTimeMs(at: now) - laps[index].startTimerMs }
        return s
    }

    public var currentLap: Lap? { laps.last }

    /// Brings the stored timer times of the ride and the open lap up to `now`.
    mutating func syncTimers(at now: MonotonicInstant) {
        guard startInstant != nil else { return }
        ride.timerTimeMs = timerTimeMs(at: now)
        let i = laps.count - 1
        if i >= 0, laps[i].endInstant == nil { laps[i].statistics.timerTimeMs = ride.timerTimeMs - laps[i].startTimerMs }
    }

    // MARK: Events

    /// Whether the event table has room for an event of `kind`: markers may not take the last
    /// `eventsReservedForLifecycle` places, pauses, resumes, laps and gaps not the very last,
    /// which is kept for the stop. Ask before changing anything else, so that the lifecycle
    /// and the builder change together or not at all.
    public func canRecord(_ kind: RideEvent.Kind) -> Bool {
        let n = events.count, max = settings.eventsMax
        switch kind {
        case .stop: return n < max
        case .marker, .radar: return n < max - settings.eventsReservedForLifecycle
        case .lap: return n < max - 1 && laps.count < settings.lapsMax
        case .start, .pause, .resume, .gap: return n < max - 1
        }
    }

    private func checkOrder(_ instant: MonotonicInstant, _ kind: RideEvent.Kind) throws(BuilderRejection) {
        if let last = events.last?.instant, instant < last { throw .outOfOrder }
        if instant < advancedTo { throw .outOfOrder }
        if !canRecord(kind) { throw .capacityReached }
    }

    /// The earliest instant an event is accepted at (the last event's and the time-weighted
    /// figures' instant): an event dated before it is out of order.
    public var orderFloor: MonotonicInstant { max(events.last?.instant ?? advancedTo, advancedTo) }

    /// Whether `kind` at `instant` would be accepted now (no side effect).
    public func check(_ kind: RideEvent.Kind, at instant: MonotonicInstant) -> BuilderRejection? {
        switch kind {
        case .start: if startInstant != nil { return .invalidEvent }
        case .pause, .lap: if !isRunning || stopInstant != nil { return .invalidEvent }
        case .resume: if isRunning || startInstant == nil || stopInstant != nil { return .invalidEvent }
        case .stop: if startInstant == nil || stopInstant != nil { return .invalidEvent }
        case .marker, .gap, .radar: if startInstant == nil || stopInstant != nil { return .notCollecting }
        }
        do { try checkOrder(instant, kind) } catch { return error }
        return nil
    }

    public mutating func start(at instant: MonotonicInstant) throws(BuilderRejection) {
        if let e = check(.start, at: instant) { throw e }
        startInstant = instant
        isRunning = true
        runningSince = instant
        stretchEnd = nil
        events.append(RideEvent(.start, at: instant))
        openLap(at: instant)
        syncTimers(at: instant)
    }

    public mutating func pause(at instant: MonotonicInstant, trigger: Trigger = .manual) throws(BuilderRejection) {
        if let e = check(.pause, at: instant) { throw e }
        endRunningStretch(at: instant)
        events.append(RideEvent(.pause, at: instant, trigger: trigger))
    }

    public mutating func resume(at instant: MonotonicInstant, trigger: Trigger = .manual) throws(BuilderRejection) {
        if let e = check(.resume, at: instant) { throw e }
        beginRunningStretch(at: instant)
        events.append(RideEvent(.resume, at: instant, trigger: trigger))
    }

    public mutating func lap(at instant: MonotonicInstant, trigger: Trigger = .manual) throws(BuilderRejection) {
        if let e = check(.lap, at: instant) { throw e }
        resolveHolds(atEdge: instant, keepHolding: true)
        syncTimers(at: instant)
        closeLap(at: instant, trigger: trigger)
        events.append(RideEvent(.lap, at: instant, trigger: trigger))
        openLap(at: instant)
    }

    public mutating func stop(at instant: MonotonicInstant) throws(BuilderRejection) {
        if let e = check(.stop, at: instant) { throw e }
        if isRunning { endRunningStretch(at: instant) }
        closeLap(at: instant, trigger: .sessionEnd)
        normalizedPower.finishSecond()
        stopInstant = instant
        events.append(RideEvent(.stop, at: instant))
    }

    /// A marker (water, note, segment) or a recovery gap. A gap (`value` = its length in ms)
    /// while running stops the timer at its instant and starts it again when the device came
    /// back: the time the device was down is elapsed time, never timer time.
    public mutating func mark(_ event: RideEvent) throws(BuilderRejection) {
        guard event.kind == .marker || event.kind == .gap || event.kind == .radar else { throw .invalidEvent }
        if let e = check(event.kind, at: event.instant) { throw e }
        if event.kind == .radar {
            guard let r = RadarAlertRecord(value: event.value) else { throw .invalidEvent }
            radar.add(r)
        }
        if event.kind == .gap && isRunning {
            endRunningStretch(at: event.instant)
            beginRunningStretch(at: event.instant.advanced(byMs: max(0, event.value)))
        }
        events.append(event)
    }

    /// Metadata; the zero-averaging keys (`cadenceAveragingKey`, `powerAveragingKey`) also set
    /// the convention.
    public mutating func setMetadata(_ key: String, _ value: String) {
        if let i = metadata.firstIndex(where: { $0.key == key }) { metadata[i].value = value } else { metadata.append((key, value)) }
        if key == Self.cadenceAveragingKey, let z = Self.parseAveraging(value) { setZeroAveraging(z, for: .cadence) }
        if key == Self.powerAveragingKey, let z = Self.parseAveraging(value) { setZeroAveraging(z, for: .power) }
    }

    private mutating func openLap(at instant: MonotonicInstant) {
        var lap = Lap(index: laps.count, startInstant: instant, startTimerMs: timerTimeMs(at: instant),
                      heartRateZoneTimes: ZoneTimes(zoneCount: settings.heartRateZones?.zoneCount ?? 0),
                      powerZoneTimes: ZoneTimes(zoneCount: settings.powerZones?.zoneCount ?? 0))
        for q in 0..<Quantity.countMax where zeroAveraging[q] != .includeZeros {
            lap.statistics.perQuantity[q].setZeroAveraging(zeroAveraging[q])
        }
        laps.append(lap)
    }

    private mutating func closeLap(at instant: MonotonicInstant, trigger: Trigger) {
        let i = laps.count - 1
        laps[i].statistics.timerTimeMs = timerTimeMs(at: instant) - laps[i].startTimerMs
        laps[i].endInstant = instant
        laps[i].trigger = trigger
        laps[i].normalizedPower.finishSecond()
    }

    private mutating func beginRunningStretch(at instant: MonotonicInstant) {
        // A counter read before the stretch is no base for it: the first reading in it is.
        for q in Quantity.allCases where !q.countsAcrossPauses { cumulativeBaseline[q.index] = false }
        isRunning = true
        runningSince = instant
        stretchEnd = nil
        syncTimers(at: instant)
    }

    private mutating func endRunningStretch(at instant: MonotonicInstant) {
        resolveHolds(atEdge: instant, keepHolding: false)
        timerMsAtRunningSince += max(0, instant.milliseconds(since: runningSince))
        isRunning = false
        stretchEnd = instant
        syncTimers(at: instant)
    }

    /// At a pause, lap edge, gap or stop: a held value whose hold limit reaches the edge counts
    /// up to it; the others were weighed up to their sample period already.
    private mutating func resolveHolds(atEdge instant: MonotonicInstant, keepHolding: Bool) {
        for q in 0..<Quantity.countMax where heldActive[q] {
            let limit = heldSampleAt[q].advanced(byMs: settings.sampleHoldLimitMs)
            weighHeld(q, upTo: instant <= limit ? instant : min(instant, provisionalEnd(q)))
            if !keepHolding || instant > limit { heldActive[q] = false }
        }
    }

    // MARK: Samples

    /// Adds a sample. Counted into statistics only while running (and, without time weight, at
    /// the instant a running stretch ended); refused (and counted) when out of order or not
    /// finite.
    public mutating func add(_ sample: Sample) throws(BuilderRejection) {
        let q = sample.quantity.index
        guard sample.value.isFinite else { rejectedNotFinite &+= 1; throw .notFinite }
        guard let start = startInstant, sample.instant >= start else { throw .notCollecting }
        if let stop = stopInstant, sample.instant != stop { throw .notCollecting }
        guard sample.instant >= newestInstant[q], sample.instant >= advancedTo else { rejectedOutOfOrder &+= 1; throw .outOfOrder }
        newestInstant[q] = sample.instant
        if !isRunning || sample.instant < runningSince {
            if let end = stretchEnd, sample.instant == end {
                addAtStretchEnd(sample, end: end)
                return
            }
            if stopInstant != nil { throw .notCollecting }
            uncountedSamples &+= 1
            if sample.quantity.isCumulative && !sample.quantity.countsAcrossPauses {
                cumulativeLast[q] = sample.value
                cumulativeBaseline[q] = false
            }
            return
        }
        syncTimers(at: sample.instant)
        if sample.quantity.isCumulative {
            addCumulative(sample)
            return
        }
        if heldActive[q] {
            let limit = heldSampleAt[q].advanced(byMs: settings.sampleHoldLimitMs)
            weighHeld(q, upTo: sample.instant <= limit ? sample.instant : provisionalEnd(q))
        }
        let timerMs = timerTimeMs(at: sample.instant)
        ride.perQuantity[q].observe(sample.value)
        laps[laps.count - 1].statistics.perQuantity[q].observe(sample.value)
        intervals.observe(sample.quantity, sample.value, timerMs: timerMs)
        if sample.quantity == .rrInterval { heldActive[q] = false; return } // a series, not a held level
        heldValue[q] = sample.value
        heldSampleAt[q] = sample.instant
        heldFrom[q] = sample.instant
        heldActive[q] = true
        if advancedTo > sample.instant { flushProvisional(q, upTo: advancedTo) }
    }

    /// A sample at the instant a running stretch ended: extremes and distance, no time weight.
    private mutating func addAtStretchEnd(_ sample: Sample, end: MonotonicInstant) {
        let q = sample.quantity.index
        let lap = laps.count - 1
        if sample.quantity.isCumulative {
            if cumulativeBaseline[q] {
                let delta = sample.value - cumulativeLast[q]
                if delta > 0 {
                    ride.totals[q] += delta
                    laps[lap].statistics.totals[q] += delta
                }
            }
            cumulativeLast[q] = sample.value
            cumulativeBaseline[q] = true
        } else {
            intervals.observe(sample.quantity, sample.value, timerMs: max(0, timerTimeMs(at: end) - 1))
        }
        ride.perQuantity[q].observe(sample.value)
        laps[lap].statistics.perQuantity[q].observe(sample.value)
    }

    private mutating func addCumulative(_ sample: Sample) {
        let q = sample.quantity.index
        if cumulativeBaseline[q] {
            let delta = sample.value - cumulativeLast[q]
            if delta > 0 {
                ride.totals[q] += delta
                laps[laps.count - 1].statistics.totals[q] += delta
            }
        }
        cumulativeLast[q] = sample.value
        cumulativeBaseline[q] = true
        ride.perQuantity[q].observe(sample.value)
        laps[laps.count - 1].statistics.perQuantity[q].observe(sample.value)
    }

    /// `quantity` has no value from `instant` on (its sensor was reported stale or lost): the
    /// value held is not bridged to a later sample.
    public mutating func interrupt(_ quantity: Quantity, at instant: MonotonicInstant) {
        let q = quantity.index
        guard heldActive[q], isRunning, instant >= heldFrom[q] else { return }
        weighHeld(q, upTo: min(instant, provisionalEnd(q)))
        heldActive[q] = false
    }

    /// Brings time-weighted figures up to `now` (call on the 1 Hz tick so live averages, zone
    /// times and NP advance even when a sensor is quiet). A held value is weighed up to its
    /// sample period; the rest of a bridge is weighed when the next sample comes.
    public mutating func advance(to now: MonotonicInstant) {
        guard isRunning, now > advancedTo else { return }
        advancedTo = now
        for q in 0..<Quantity.countMax where heldActive[q] { flushProvisional(q, upTo: now) }
        syncTimers(at: now)
    }

    @usableFromInline
    func provisionalEnd(_ q: Int) -> MonotonicInstant {
        heldSampleAt[q].advanced(byMs: min(settings.samplePeriodMs, settings.sampleHoldLimitMs))
    }

    @usableFromInline
    mutating func flushProvisional(_ q: Int, upTo now: MonotonicInstant) {
        weighHeld(q, upTo: min(now, provisionalEnd(q)))
        // Still held at the limit itself: a sample exactly then is bridged whatever came first.
        if now > heldSampleAt[q].advanced(byMs: settings.sampleHoldLimitMs) { heldActive[q] = false }
    }

    /// Weighs quantity `q`'s held value from `heldFrom` to `end` (nothing if `end` is not later).
    @usableFromInline
    mutating func weighHeld(_ q: Int, upTo end: MonotonicInstant) {
        let from = heldFrom[q]
        guard heldActive[q], end > from else { return }
        let durationMs = end.milliseconds(since: from)
        let value = heldValue[q]
        let fromTimerMs = timerMsAtRunningSince + from.milliseconds(since: runningSince)
        let quantity = Quantity(rawValue: UInt8(q))!
        ride.perQuantity[q].weigh(value, durationMs: durationMs)
        let lap = laps.count - 1
        laps[lap].statistics.perQuantity[q].weigh(value, durationMs: durationMs)
        intervals.weigh(quantity, value, fromMs: fromTimerMs, durationMs: durationMs)
        if quantity == .heartRate, let zones = settings.heartRateZones {
            let z = zones.zone(of: value)
            heartRateZoneTimes.add(durationMs, toZone: z)
            laps[lap].heartRateZoneTimes.add(durationMs, toZone: z)
        } else if quantity == .speed {
            if value >= settings.movingSpeedMps {
                ride.movingTimeMs += durationMs
                laps[lap].statistics.movingTimeMs += durationMs
            }
        } else if quantity == .power {
            if let zones = settings.powerZones {
                let z = zones.zone(of: value)
                powerZoneTimes.add(durationMs, toZone: z)
                laps[lap].powerZoneTimes.add(durationMs, toZone: z)
            }
            var t = fromTimerMs
            let tEnd = fromTimerMs + durationMs
            while t < tEnd { // split at second edges: at most holdLimit/1000 + 1 pieces
                let pieceEnd = min(tEnd, (t / 1000 + 1) * 1000)
                normalizedPower.add(powerW: value, timerMs: t, durationMs: pieceEnd - t)
                laps[lap].normalizedPower.add(powerW: value, timerMs: t, durationMs: pieceEnd - t)
                t = pieceEnd
            }
        }
        heldFrom[q] = end
    }

    // MARK: Derived

    /// The 0-based zone of the most recent counted value of `quantity`, if zones are set and the
    /// value is still held.
    public func currentZone(_ quantity: Quantity) -> Int? {
        let zones = quantity == .heartRate ? settings.heartRateZones : (quantity == .power ? settings.powerZones : nil)
        guard let zones, heldActive[quantity.index] else { return nil }
        return zones.zone(of: heldValue[quantity.index])
    }

    /// Whether `quantity` has a value being held (fresh data while running).
    public func isHeld(_ quantity: Quantity) -> Bool { heldActive[quantity.index] }

    public var normalizedPowerW: Double? { normalizedPower.normalizedPowerW }

    public func trainingLoad(at now: MonotonicInstant) -> TrainingLoad? {
        TrainingLoad(normalizedPowerW: normalizedPowerW, ftpW: settings.ftpW, timerTimeMs: timerTimeMs(at: now))
    }
}
