import RideModel

/// `(new - old) mod 2^bits`: the forward distance between two readings of a wrapping counter.
@inlinable
public func wrappingDelta(_ new: UInt64, _ old: UInt64, bits: Int) -> UInt64 {
    precondition(bits > 0 && bits <= 32, "counter width \(bits) out of 1...32")
    let mask: UInt64 = (1 << UInt64(bits)) - 1
    return (new &- old) & mask
}

/// What one reading of an event counter did to its rate.
public enum RateOutcome: Sendable, Hashable {
    /// The first reading: nothing to compare with yet.
    case first
    /// `events` new events; the rate was updated.
    case newEvents(UInt64)
    /// Same event as before: the rate is held.
    case held
    /// No new event for the profile's zero time: the rate is now 0.
    case zeroed
    /// The implied rate is impossible (a counter reset, a corrupt reading): the reading becomes the
    /// new reference, the rate is held, the spike is counted.
    case spike
    /// The counter moved but its event time did not (or the reverse): reference updated, rate held.
    case inconsistent
    /// Too long since the last event for the event time to be unambiguous (it wraps): the reading
    /// becomes the new reference; `events` are still counted for distance.
    case rebased(UInt64)
}

/// The rate of a cumulative event counter read with a wrapping event time, as BLE CSC/CPS and
/// ANT+ speed/cadence report it: rollover at the counter's width, hold on a repeated event, zero
/// after `zeroAfterMs` of no new event, spikes rejected. No allocation.
public struct EventRate: Sendable, Hashable {
    public struct Limits: Sendable, Hashable {
        public var countBits: Int
        public var timeBits: Int
        /// Event time units per second (1024 or 2048).
        public var ticksPerSecond: Double
        public var zeroAfterMs: Int64
        /// Above this many events per second a reading is a spike.
        public var eventsPerSecondMax: Double

        public init(countBits: Int, timeBits: Int, ticksPerSecond: Double, zeroAfterMs: Int64, eventsPerSecondMax: Double) {
            self.countBits = countBits
            self.timeBits = timeBits
            self.ticksPerSecond = ticksPerSecond
            self.zeroAfterMs = zeroAfterMs
            self.eventsPerSecondMax = eventsPerSecondMax
        }

        /// How long the event time takes to wrap, less a 10 % margin: beyond this since the last
        /// event, a time difference cannot be trusted.
        public var unambiguousMs: Int64 {
            Int64(Double(UInt64(1) << UInt64(timeBits)) / ticksPerSecond * 900)
        }
    }

    public let limits: Limits
    public private(set) var lastCount: UInt64?
    public private(set) var lastTime: UInt64 = 0
    public private(set) var lastEventAt = MonotonicInstant.zero
    /// Events per second; nil until two readings with new events (or the zero time) have passed.
    public private(set) var eventsPerSecond: Double?

    public init(_ limits: Limits) { self.limits = limits }

    /// The sensor says it has stopped (ANT+ speed page 5): the rate is 0 until the next event.
    public mutating func stop() { eventsPerSecond = 0 }

    public mutating func reset() {
        lastCount = nil
        eventsPerSecond = nil
    }

    public mutating func update(count: UInt64, time: UInt64, at now: MonotonicInstant) -> RateOutcome {
        guard let c0 = lastCount else {
            rebase(count, time, at: now)
            return .first
        }
        let dN = wrappingDelta(count, c0, bits: limits.countBits)
        let dT = wrappingDelta(time, lastTime, bits: limits.timeBits)
        if dN == 0 && dT == 0 {
            if now.milliseconds(since: lastEventAt) >= limits.zeroAfterMs {
                let was = eventsPerSecond
                eventsPerSecond = 0
                return was == 0 ? .held : .zeroed
            }
            return .held
        }
        let sinceEventMs = now.milliseconds(since: lastEventAt)
        if sinceEventMs > limits.unambiguousMs {
            rebase(count, time, at: now)
            // More events than the spike limit allows in the elapsed time: a counter reset.
            guard Double(dN) <= limits.eventsPerSecondMax * Double(sinceEventMs) / 1000 else { return .spike }
            return .rebased(dN)
        }
        if dN == 0 || dT == 0 {
            rebase(count, time, at: now)
            return .inconsistent
        }
        let rate = Double(dN) * limits.ticksPerSecond / Double(dT)
        guard rate <= limits.eventsPerSecondMax else {
            rebase(count, time, at: now)
            return .spike
        }
        rebase(count, time, at: now)
        eventsPerSecond = rate
        return .newEvents(dN)
    }

    private mutating func rebase(_ count: UInt64, _ time: UInt64, at now: MonotonicInstant) {
        lastCount = count
        lastTime = time
        lastEventAt = now
    }
}

/// Profile limits (docs/sensors.md "Rate rules").
public enum RateLimits {
    /// Wheel: zero after 4 s without a revolution (GoldenCheetah's 15 rpm floor on a 2.1 m wheel is
    /// about 4 s); more than 30 rev/s (≈ 225 km/h on 2.1 m) is a spike.
    public static let wheelZeroAfterMs: Int64 = 4_000
    public static let wheelRevolutionsPerSecondMax = 30.0
    /// Crank: zero after 3 s without a revolution (20 rpm floor); above 250 rpm is a spike.
    public static let crankZeroAfterMs: Int64 = 3_000
    public static let crankRevolutionsPerSecondMax = 250.0 / 60
    /// Power: zero after 3 s without a new power event; an event average above 3000 W is a spike.
    public static let powerZeroAfterMs: Int64 = 3_000
    public static let powerWMax = 3_000.0
    /// Heart rate outside this range is rejected (0 means "no reading" and is not shown).
    public static let heartRateBpmMax = 250.0
    public static let heartRateBpmMin = 20.0
    /// RR intervals outside this range (0.24–3 s) are dropped.
    public static let rrIntervalSMin = 0.24
    public static let rrIntervalSMax = 3.0
}
