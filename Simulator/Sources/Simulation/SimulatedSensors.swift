import AppCore
import RideModel

/// The sensors of the synthetic ride: each sends at its own rate (heart rate about 1 Hz, power,
/// speed and cadence about 4 Hz, as the real ones do), falls silent during a dropout or while
/// the bridge restarts, and is reported lost when it stays silent.
public struct SimulatedSensors: Sendable {
    public static let framePeriodMs: [Int64] = [1_000, 250, 250, 250] // by SensorRole.rawValue
    static let phaseMs: [Int64] = [130, 60, 170, 210]
    /// Silence after which a connected sensor is reported lost.
    public static let lostAfterMs: Int64 = 5_000

    public private(set) var ride: SyntheticRide
    var present: [Bool]
    var nextDueMs: [Int64]
    var silentUntilMs: [Int64]
    var lastFrameMs: [Int64?]
    var state: [SensorState]

    public init(seed: UInt64, present: Set<Scenario.Sensor>) {
        ride = SyntheticRide(seed: seed)
        let roles: [Scenario.Sensor] = [.hr, .power, .speed, .cadence]
        self.present = roles.map { present.contains($0) }
        nextDueMs = Self.phaseMs
        silentUntilMs = Array(repeating: 0, count: 4)
        lastFrameMs = Array(repeating: nil, count: 4)
        state = Array(repeating: .searching, count: 4)
    }

    public func isPresent(_ role: SensorRole) -> Bool { present[Int(role.rawValue)] }

    static func role(_ s: Scenario.Sensor) -> Int {
        switch s {
        case .hr: 0
        case .power: 1
        case .speed: 2
        case .cadence: 3
        }
    }

    /// When the next frame (or a lost report) is due.
    public var nextFrameMs: Int64 {
        var t = Int64.max
        for i in 0..<4 where present[i] {
            t = min(t, max(nextDueMs[i], silentUntilMs[i]))
            if state[i] == .connected, let last = lastFrameMs[i] { t = min(t, last + Self.lostAfterMs) }
        }
        return t
    }

    /// Sends every frame due up to `ms`, in time order, as app inputs.
    public mutating func emit(upTo ms: Int64, _ feed: (AppInput) -> Void) {
        while true {
            var best = -1
            var bestMs = Int64.max
            for i in 0..<4 where present[i] {
                let due = max(nextDueMs[i], silentUntilMs[i])
                if due <= ms && due < bestMs { best = i; bestMs = due }
            }
            guard best >= 0 else { break }
            // Align to the sensor's own period after a silence.
            let period = Self.framePeriodMs[best]
            if nextDueMs[best] < bestMs {
                let k = (bestMs - Self.phaseMs[best] + period - 1) / period
                nextDueMs[best] = Self.phaseMs[best] + k * period
                continue
            }
            frame(best, atMs: bestMs, feed)
            nextDueMs[best] = bestMs + period
        }
        reportLost(upTo: ms, feed)
    }

    mutating func frame(_ i: Int, atMs ms: Int64, _ feed: (AppInput) -> Void) {
        ride.advance(toMs: ms)
        let now = MonotonicInstant(milliseconds: ms)
        let role = SensorRole(rawValue: UInt8(i))!
        if state[i] != .connected {
            state[i] = .connected
            feed(.sensor(SensorStatus(role, .connected), at: now))
        }
        lastFrameMs[i] = ms
        switch role {
        case .heartRate:
            feed(.sample(Sample(.heartRate, ride.heartRateBpm.rounded(), at: now)))
        case .power:
            feed(.sample(Sample(.power, ride.powerW.rounded(), at: now)))
        case .speed:
            feed(.sample(Sample(.speed, ride.speedMps, at: now)))
            feed(.sample(Sample(.distance, ride.distanceM, at: now, origin: .generated)))
        case .cadence:
            feed(.sample(Sample(.cadence, ride.cadenceRpm.rounded(), at: now)))
        }
    }

    mutating func reportLost(upTo ms: Int64, _ feed: (AppInput) -> Void) {
        for i in 0..<4 where present[i] && state[i] == .connected {
            guard let last = lastFrameMs[i], ms - last >= Self.lostAfterMs else { continue }
            state[i] = .lost
            feed(.sensor(SensorStatus(SensorRole(rawValue: UInt8(i))!, .lost), at: MonotonicInstant(milliseconds: last + Self.lostAfterMs)))
        }
    }

    public mutating func dropout(_ s: Scenario.Sensor, fromMs: Int64, lengthMs: Int64, _ feed: (AppInput) -> Void) {
        let i = Self.role(s)
        silentUntilMs[i] = max(silentUntilMs[i], fromMs + lengthMs)
    }

    /// The bridge dies: every sensor is lost at once, until it is back.
    public mutating func bridgeDown(fromMs: Int64, lengthMs: Int64, _ feed: (AppInput) -> Void) {
        for i in 0..<4 where present[i] {
            silentUntilMs[i] = max(silentUntilMs[i], fromMs + lengthMs)
            if state[i] == .connected {
                state[i] = .lost
                feed(.sensor(SensorStatus(SensorRole(rawValue: UInt8(i))!, .lost), at: MonotonicInstant(milliseconds: fromMs)))
            }
        }
    }

    /// The device restarted: the connections must be made again.
    public mutating func deviceRestarted() {
        for i in 0..<4 { state[i] = .searching; lastFrameMs[i] = nil }
    }

    /// The device is down: the sensors go on riding but nobody listens.
    public mutating func skip(to ms: Int64) {
        ride.advance(toMs: ms)
        for i in 0..<4 where nextDueMs[i] <= ms {
            let period = Self.framePeriodMs[i]
            nextDueMs[i] += ((ms - nextDueMs[i]) / period + 1) * period
        }
    }
}
