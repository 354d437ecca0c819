/// Settings of one ride that the builder needs.
public struct RideSettings: Sendable, Hashable {
    /// Functional threshold power, for intensity factor and training stress.
    public var ftpW: Double?
    public var heartRateZones: ZoneConfiguration?
    public var powerZones: ZoneConfiguration?
    public var intervalMs: Int64
    public var intervalBucketsMax: Int
    /// A value is held from its sample until the next sample of the same quantity, but no longer
    /// than this: a sensor that stops sending stops counting.
    public var sampleHoldLimitMs: Int64
    /// Laps kept (storage reserved up front).
    public var lapsMax: Int
    /// Events kept (storage reserved up front).
    public var eventsMax: Int

    public init(ftpW: Double? = nil,
                heartRateZones: ZoneConfiguration? = .defaultHeartRate,
                powerZones: ZoneConfiguration? = nil,
                intervalMs: Int64 = IntervalTable.defaultIntervalMs,
                intervalBucketsMax: Int = IntervalTable.defaultBucketsMax,
                sampleHoldLimitMs: Int64 = 5_000,
                lapsMax: Int = 500,
                eventsMax: Int = 8_192) {
        self.ftpW = ftpW
        self.heartRateZones = heartRateZones
        self.powerZones = powerZones
        self.intervalMs = intervalMs
        self.intervalBucketsMax = intervalBucketsMax
        self.sampleHoldLimitMs = sampleHoldLimitMs
        self.lapsMax = lapsMax
        self.eventsMax = eventsMax
    }
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
public enum BuilderRejection: Error, Sendable, Hashable {
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
}

/// Collects samples and events of one ride and keeps its statistics (workout-model.md §2).
///
/// Pure and O(1) per sample with no allocation after `init` (laps and events have reserved
/// storage). Averages are time-weighted over timer time: a value counts from its sample's
/// instant until the next sample of the same quantity, `sampleHoldLimitMs` later, or the next
/// pause, lap edge or stop, whichever comes first; only samples taken while running count.
public struct RideBuilder: Sendable {
    public let settings: RideSettings

    public internal(set) var startInstant: MonotonicInstant?
    public internal(set) var stopInstant: MonotonicInstant?
    public internal(set) var isRunning = false
    /// The events in order.
    public internal(set) var events: [RideEvent] = []
    public internal(set) var metadata: [(key: String, value: String)] = []

    public internal(set) var ride = StatisticsSet()
    public internal(set) var laps: [Lap] = []
    public internal(set) var intervals: IntervalTable
    public internal(set) var normalizedPower = NormalizedPowerAccumulator()
    public internal(set) var heartRateZoneTimes: ZoneTimes
    public internal(set) var powerZoneTimes: ZoneTimes

    /// Samples refused, by reason (counted, never silently dropped).
    public internal(set) var rejectedOutOfOrder: UInt64 = 0
    public internal(set) var rejectedNotFinite: UInt64 = 0
    /// Samples taken while paused or prepared (recorded elsewhere, not counted here).
    public internal(set) var uncountedSamples: UInt64 = 0

    // Held-value segments, one per quantity.
    @usableFromInline var heldValue: [Double]
    @usableFromInline var heldFrom: [MonotonicInstant]   // flushed up to here
    @usableFromInline var heldUntil: [MonotonicInstant]  // hold limit
    @usableFromInline var heldActive: [Bool]
    @usableFromInline var newestInstant: [MonotonicInstant]
    // Cumulative quantities: last reading and whether it was taken in the current running stretch.
    @usableFromInline var cumulativeLast: [Double]
    @usableFromInline var cumulativeBaseline: [Bool]

    // Timer bookkeeping: the instant the current running stretch began and the timer time then.
    @usableFromInline var runningSince = MonotonicInstant.zero
    @usableFromInline var timerMsAtRunningSince: Int64 = 0
    @usableFromInline var lapTimerSince = MonotonicInstant.zero
    /// Time-weighted figures are complete up to here (`advance(to:)`); older samples are refused.
    @usableFromInline var advancedTo = MonotonicInstant(milliseconds: .min)

    public init(settings: RideSettings = RideSettings()) {
        self.settings = settings
        intervals = IntervalTable(intervalMs: settings.intervalMs, bucketsMax: settings.intervalBucketsMax)
        heartRateZoneTimes = ZoneTimes(zoneCount: settings.heartRateZones?.zoneCount ?? 0)
        powerZoneTimes = ZoneTimes(zoneCount: settings.powerZones?.zoneCount ?? 0)
        let n = Quantity.countMax
        heldValue = Array(repeating: 0, count: n)
        heldFrom = Array(repeating: .zero, count: n)
        heldUntil = Array(repeating: .zero, count: n)
        heldActive = Array(repeating: false, count: n)
        newestInstant = Array(repeating: MonotonicInstant(milliseconds: .min), count: n)
        cumulativeLast = Array(repeating: 0, count: n)
        cumulativeBaseline = Array(repeating: false, count: n)
        laps.reserveCapacity(settings.lapsMax)
        events.reserveCapacity(settings.eventsMax)
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
        return lap.statistics.timerTimeMs + (isRunning ? max(0, now.milliseconds(since: lapTimerSince)) : 0)
    }

    public var currentLap: Lap? { laps.last }

    // MARK: Events

    private func checkOrder(_ instant: MonotonicInstant) throws(BuilderRejection) {
        if let last = events.last?.instant, instant < last { throw .outOfOrder }
        if events.count >= settings.eventsMax { throw .capacityReached }
    }

    public mutating func start(at instant: MonotonicInstant) throws(BuilderRejection) {
        guard startInstant == nil else { throw .invalidEvent }
        try checkOrder(instant)
        startInstant = instant
        isRunning = true
        runningSince = instant
        lapTimerSince = instant
        events.append(RideEvent(.start, at: instant))
        openLap(at: instant)
    }

    public mutating func pause(at instant: MonotonicInstant, trigger: Trigger = .manual) throws(BuilderRejection) {
        guard isRunning, stopInstant == nil else { throw .invalidEvent }
        try checkOrder(instant)
        endRunningStretch(at: instant)
        events.append(RideEvent(.pause, at: instant, trigger: trigger))
    }

    public mutating func resume(at instant: MonotonicInstant, trigger: Trigger = .manual) throws(BuilderRejection) {
        guard !isRunning, startInstant != nil, stopInstant == nil else { throw .invalidEvent }
        try checkOrder(instant)
        isRunning = true
        runningSince = instant
        lapTimerSince = instant
        events.append(RideEvent(.resume, at: instant, trigger: trigger))
    }

    public mutating func lap(at instant: MonotonicInstant, trigger: Trigger = .manual) throws(BuilderRejection) {
        guard isRunning, stopInstant == nil else { throw .invalidEvent }
        try checkOrder(instant)
        guard laps.count < settings.lapsMax else { throw .capacityReached }
        flushAll(upTo: instant)
        closeLap(at: instant, trigger: trigger)
        events.append(RideEvent(.lap, at: instant, trigger: trigger))
        openLap(at: instant)
    }

    public mutating func stop(at instant: MonotonicInstant) throws(BuilderRejection) {
        guard startInstant != nil, stopInstant == nil else { throw .invalidEvent }
        try checkOrder(instant)
        if isRunning { endRunningStretch(at: instant) }
        closeLap(at: instant, trigger: .sessionEnd)
        normalizedPower.finishSecond()
        stopInstant = instant
        events.append(RideEvent(.stop, at: instant))
    }

    /// A marker (water, note, segment) or a recovery gap.
    public mutating func mark(_ event: RideEvent) throws(BuilderRejection) {
        guard event.kind == .marker || event.kind == .gap else { throw .invalidEvent }
        guard startInstant != nil, stopInstant == nil else { throw .notCollecting }
        try checkOrder(event.instant)
        events.append(event)
    }

    public mutating func setMetadata(_ key: String, _ value: String) {
        if let i = metadata.firstIndex(where: { $0.key == key }) { metadata[i].value = value } else { metadata.append((key, value)) }
    }

    private mutating func openLap(at instant: MonotonicInstant) {
        laps.append(Lap(index: laps.count, startInstant: instant, startTimerMs: timerTimeMs(at: instant),
                        heartRateZoneTimes: ZoneTimes(zoneCount: settings.heartRateZones?.zoneCount ?? 0),
                        powerZoneTimes: ZoneTimes(zoneCount: settings.powerZones?.zoneCount ?? 0)))
        lapTimerSince = instant
    }

    private mutating func closeLap(at instant: MonotonicInstant, trigger: Trigger) {
        let i = laps.count - 1
        if isRunning { laps[i].statistics.timerTimeMs += instant.milliseconds(since: lapTimerSince) }
        lapTimerSince = instant
        laps[i].endInstant = instant
        laps[i].trigger = trigger
        laps[i].normalizedPower.finishSecond()
    }

    private mutating func endRunningStretch(at instant: MonotonicInstant) {
        flushAll(upTo: instant)
        for q in 0..<Quantity.countMax {
            heldActive[q] = false
            cumulativeBaseline[q] = false
        }
        let stretch = instant.milliseconds(since: runningSince)
        timerMsAtRunningSince += stretch
        ride.timerTimeMs = timerMsAtRunningSince
        let i = laps.count - 1
        laps[i].statistics.timerTimeMs += instant.milliseconds(since: lapTimerSince)
        lapTimerSince = instant
        isRunning = false
    }

    // MARK: Samples

    /// Adds a sample. Counted into statistics only while running; refused (and counted) when out
    /// of order or not finite.
    public mutating func add(_ sample: Sample) throws(BuilderRejection) {
        let q = sample.quantity.index
        guard sample.value.isFinite else { rejectedNotFinite &+= 1; throw .notFinite }
        guard startInstant != nil, stopInstant == nil else { throw .notCollecting }
        guard sample.instant >= newestInstant[q], sample.instant >= advancedTo else { rejectedOutOfOrder &+= 1; throw .outOfOrder }
        newestInstant[q] = sample.instant
        guard isRunning, sample.instant >= runningSince else {
            uncountedSamples &+= 1
            if sample.quantity.isCumulative {
                cumulativeLast[q] = sample.value
                cumulativeBaseline[q] = false
            }
            return
        }
        if sample.quantity.isCumulative {
            addCumulative(sample)
            return
        }
        flush(q, upTo: sample.instant)
        let timerMs = timerTimeMs(at: sample.instant)
        ride.perQuantity[q].observe(sample.value)
        laps[laps.count - 1].statistics.perQuantity[q].observe(sample.value)
        intervals.observe(sample.quantity, sample.value, timerMs: timerMs)
        if sample.quantity == .rrInterval { return } // a series, not a held level
        heldValue[q] = sample.value
        heldFrom[q] = sample.instant
        heldUntil[q] = sample.instant.advanced(byMs: settings.sampleHoldLimitMs)
        heldActive[q] = true
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

    /// Brings time-weighted figures up to `now` (call on the 1 Hz tick so live averages, zone
    /// times and NP advance even when a sensor is quiet).
    public mutating func advance(to now: MonotonicInstant) {
        guard isRunning, now > advancedTo else { return }
        advancedTo = now
        flushAll(upTo: now)
    }

    @usableFromInline
    mutating func flushAll(upTo instant: MonotonicInstant) {
        for q in 0..<Quantity.countMax where heldActive[q] { flush(q, upTo: instant) }
    }

    /// Weighs quantity `q`'s held value from `heldFrom` to min(`instant`, hold limit).
    @usableFromInline
    mutating func flush(_ q: Int, upTo instant: MonotonicInstant) {
        guard heldActive[q] else { return }
        let end = min(instant, heldUntil[q])
        let from = heldFrom[q]
        if end > from {
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
        if instant >= heldUntil[q] { heldActive[q] = false }
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
