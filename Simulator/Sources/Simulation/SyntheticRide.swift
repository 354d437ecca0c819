import RideModel

/// A synthetic ride whose numbers hang together: power follows a workout (warm-up, intervals, a
/// climb, a stop at a junction, a cool-down, repeated for long rides); speed follows power
/// through a road-load model with inertia; cadence follows speed and gradient; heart rate lags
/// effort. Deterministic for a seed. Pure.
public struct SyntheticRide: Sendable {
    /// One block of the workout.
    public struct Block: Sendable, Hashable {
        public var durationS: Int
        public var powerW: Double
        /// Power at the end of the block (a ramp when different from `powerW`).
        public var endPowerW: Double
        public var gradePercent: Double
        public var name: String
    }

    public static let demoWorkout: [Block] = [
        Block(durationS: 420, powerW: 120, endPowerW: 190, gradePercent: 0, name: "warm-up"),
        Block(durationS: 120, powerW: 310, endPowerW: 310, gradePercent: 0, name: "interval 1"),
        Block(durationS: 90, powerW: 140, endPowerW: 140, gradePercent: 0, name: "recovery"),
        Block(durationS: 120, powerW: 320, endPowerW: 320, gradePercent: 0, name: "interval 2"),
        Block(durationS: 90, powerW: 140, endPowerW: 140, gradePercent: 0, name: "recovery"),
        Block(durationS: 120, powerW: 330, endPowerW: 330, gradePercent: 0, name: "interval 3"),
        Block(durationS: 180, powerW: 150, endPowerW: 150, gradePercent: 0, name: "endurance"),
        Block(durationS: 480, powerW: 265, endPowerW: 265, gradePercent: 6, name: "climb"),
        Block(durationS: 60, powerW: 60, endPowerW: 60, gradePercent: -5, name: "descent"),
        Block(durationS: 40, powerW: 0, endPowerW: 0, gradePercent: 0, name: "stop"),
        Block(durationS: 300, powerW: 170, endPowerW: 110, gradePercent: 0, name: "cool-down"),
    ]

    /// Length of one pass through the workout, s (it repeats for longer rides).
    public static var workoutLengthS: Int { demoWorkout.reduce(0) { $0 + $1.durationS } }

    // Rider and bike.
    public var massKg = 82.0
    public var cdaM2 = 0.32
    public var crr = 0.0045
    public var airDensity = 1.2
    public var restingHeartRate = 55.0
    public var maxHeartRate = 185.0
    public var ftpW = 260.0
    public var wheelCircumferenceM = 2.105

    // State.
    public private(set) var timeMs: Int64 = 0
    public private(set) var powerW = 0.0
    public private(set) var speedMps = 0.0
    public private(set) var cadenceRpm = 0.0
    public private(set) var heartRateBpm: Double
    public private(set) var distanceM = 0.0
    /// Height above sea level, m: the route's start height plus the workout's grades ridden
    /// (the route and elevation profile: SyntheticRoute.swift).
    public private(set) var altitudeM = SyntheticRide.startAltitudeM
    public static let startAltitudeM = 436.0
    /// Cumulative revolutions (fractional) and the instants of the last whole revolution.
    public private(set) var wheelRevolutions = 0.0
    public private(set) var crankRevolutions = 0.0
    public private(set) var lastWheelEventMs: Int64 = 0
    public private(set) var lastCrankEventMs: Int64 = 0
    public private(set) var accumulatedPowerW = 0.0
    public private(set) var blockName = "warm-up"
    /// Heart beats and the instant of the last beat (for RR intervals).
    public private(set) var beats = 0.0
    public private(set) var lastBeatMs: Int64 = 0
    public private(set) var previousBeatMs: Int64 = 0

    var rng: SplitMix64

    public init(seed: UInt64) {
        rng = SplitMix64(seed: seed ^ 0x5DEE_CE66_D1CE_4E5B)
        heartRateBpm = restingHeartRate + 20
    }

    /// Uniform in [-1, 1).
    mutating func noise() -> Double {
        Double(rng.next() >> 11) / Double(1 << 52) - 1
    }

    /// The workout block and its target power and grade at time `s`.
    public static func target(atS s: Double) -> (powerW: Double, gradePercent: Double, name: String) {
        let length = Double(workoutLengthS)
        var t = s.truncatingRemainder(dividingBy: length)
        for b in demoWorkout {
            if t < Double(b.durationS) {
                let f = t / Double(b.durationS)
                return (b.powerW + (b.endPowerW - b.powerW) * f, b.gradePercent, b.name)
            }
            t -= Double(b.durationS)
        }
        return (0, 0, "end")
    }

    /// Advances the simulation to `ms` in steps of at most 100 ms.
    public mutating func advance(toMs ms: Int64) {
        while timeMs < ms {
            let stepMs = min(100, ms - timeMs)
            step(dtMs: stepMs)
        }
    }

    mutating func step(dtMs: Int64) {
        let dt = Double(dtMs) / 1000
        let tS = Double(timeMs) / 1000
        let target = Self.target(atS: tS)
        blockName = target.name
        // Power: the target plus a little pedalling noise; zero at the stop.
        let wobble = target.powerW > 0 ? 1 + 0.04 * noise() : 0
        powerW = max(0, target.powerW * wobble)
        // Road load: P = v (m g (crr + grade)) + ½ ρ CdA v³; inertia m dv/dt = P/v − resistance.
        let grade = target.gradePercent / 100
        let g = 9.81
        let resist = massKg * g * (crr + grade) + 0.5 * airDensity * cdaM2 * speedMps * speedMps
        let drive = powerW / max(speedMps, 1.0)
        var accel = (drive - resist) / massKg
        if target.powerW == 0 { accel = -1.5 } // braking to a stop
        speedMps = max(0, speedMps + accel * dt)
        if target.powerW == 0 && speedMps < 0.3 { speedMps = 0 }
        // Cadence: gear-limited; lower on climbs; zero when not pedalling.
        if powerW > 5 && speedMps > 0.5 {
            let base = grade > 0.03 ? 74.0 : 90.0
            cadenceRpm = max(50, min(115, base + 6 * noise() + (speedMps - 9) * 0.8))
        } else {
            cadenceRpm = 0
        }
        // Heart rate lags effort (first order, τ = 35 s).
        let effort = min(1.3, powerW / ftpW)
        let hrTarget = restingHeartRate + 25 + (maxHeartRate - restingHeartRate - 25) * 0.9 * effort
        heartRateBpm += (min(maxHeartRate, hrTarget) - heartRateBpm) * (dt / 35)
        // Counters.
        let newTimeMs = timeMs + dtMs
        distanceM += speedMps * dt
        altitudeM += speedMps * dt * grade
        let wheelBefore = wheelRevolutions.rounded(.down)
        wheelRevolutions += speedMps * dt / wheelCircumferenceM
        if wheelRevolutions.rounded(.down) > wheelBefore { lastWheelEventMs = newTimeMs }
        let crankBefore = crankRevolutions.rounded(.down)
        crankRevolutions += cadenceRpm / 60 * dt
        if crankRevolutions.rounded(.down) > crankBefore { lastCrankEventMs = newTimeMs }
        accumulatedPowerW += powerW * dt
        let beatsBefore = beats.rounded(.down)
        beats += heartRateBpm / 60 * dt
        if beats.rounded(.down) > beatsBefore {
            previousBeatMs = lastBeatMs
            lastBeatMs = newTimeMs
        }
        timeMs = newTimeMs
    }
}
