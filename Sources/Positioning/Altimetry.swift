import RealModule
import RideModel

/// Altitude from pressure, the International Standard Atmosphere's troposphere:
/// h = T₀/L · (1 − (p/p₀)^(R·L/(g·M))), T₀ = 288.15 K, L = 0.0065 K/m.
public enum PressureAltitude {
    public static let standardSeaLevelPa = 101_325.0
    /// T₀/L, m.
    public static let scaleM = 44_330.77
    /// R·L/(g·M).
    public static let exponent = 0.190_263

    public static func altitudeM(pressurePa p: Double, seaLevelPa p0: Double = standardSeaLevelPa) -> Double {
        scaleM * (1 - Double.pow(p / p0, exponent))
    }

    /// The sea-level pressure that makes `pressurePa` read as `altitudeM`.
    public static func seaLevelPa(pressurePa p: Double, altitudeM h: Double) -> Double {
        p / Double.pow(1 - h / scaleM, 1 / exponent)
    }
}

/// Total ascent and descent with hysteresis: a climb counts once the altitude has risen
/// `thresholdM` above the last turning point, and from then on every metre up counts until the
/// altitude has fallen `thresholdM` below the highest point (and the same for descents). Noise
/// smaller than the threshold never counts; a real climb counts in full, including the first
/// `thresholdM` metres (which a "count only steps of N metres" rule drops: the usual reason open
/// projects read 10–15 % low).
public struct AscentCounter: Sendable, Hashable {
    public let thresholdM: Double
    public private(set) var ascentM = 0.0
    public private(set) var descentM = 0.0
    /// The last turning point (or the highest/lowest point of the current climb/descent).
    var reference: Double?
    /// +1 climbing, −1 descending, 0 not known yet.
    var direction = 0

    public init(thresholdM: Double) {
        precondition(thresholdM >= 0)
        self.thresholdM = thresholdM
    }

    public mutating func add(_ altitudeM: Double) {
        guard altitudeM.isFinite else { return }
        guard let ref = reference else { reference = altitudeM; return }
        if altitudeM > ref {
            if direction == 1 || altitudeM - ref >= thresholdM {
                ascentM += altitudeM - ref
                reference = altitudeM
                direction = 1
            }
        } else if altitudeM < ref {
            if direction == -1 || ref - altitudeM >= thresholdM {
                descentM += ref - altitudeM
                reference = altitudeM
                direction = -1
            }
        }
    }

    /// Starts again from `altitudeM` without counting the step to it (a change of altitude
    /// source, a calibration).
    public mutating func rebase(_ altitudeM: Double) {
        reference = altitudeM
        direction = 0
    }
}

/// Grade over the last stretch of road: (altitude now − altitude `windowM` back) / distance,
/// from 1 Hz (distance, altitude) pairs. Absent while the bike covers less than `minimumM` in
/// the window (standing, walking).
public struct GradeWindow: Sendable {
    /// Points kept: two minutes at 1 Hz (a window longer than the road covered in two minutes
    /// at walking pace gives no grade).
    public static let pointsMax = 120
    public let windowM: Double
    public let minimumM: Double
    var points: RingBuffer<(distanceM: Double, altitudeM: Double)>

    public init(windowM: Double, minimumM: Double) {
        self.windowM = windowM
        self.minimumM = minimumM
        points = RingBuffer(capacity: Self.pointsMax)
    }

    public mutating func reset() { points.removeAll() }

    /// Adds a point; returns the grade in percent, or nil.
    public mutating func add(distanceM: Double, altitudeM: Double) -> Double? {
        if let last = points.last, distanceM < last.distanceM { points.removeAll() } // a counter reset
        points.append((distanceM, altitudeM))
        // The oldest point at least `windowM` back, else the oldest kept.
        var i = points.count - 1
        while i > 0, distanceM - points[i].distanceM < windowM { i -= 1 }
        let from = points[i]
        let run = distanceM - from.distanceM
        guard run >= minimumM else { return nil }
        let grade = (altitudeM - from.altitudeM) / run * 100
        return max(-Altimetry.gradeLimitPercent, min(Altimetry.gradeLimitPercent, grade))
    }
}

/// A moving average over the last `count` values (GPS altitude's second-to-second noise).
public struct MovingAverage: Sendable {
    var values: RingBuffer<Double>
    var sum = 0.0

    public init(count: Int) { values = RingBuffer(capacity: count) }

    public mutating func reset() { values.removeAll(); sum = 0 }

    public mutating func add(_ v: Double) -> Double {
        if let old = values.append(v) { sum -= old }
        sum += v
        // Re-sum now and then so rounding errors cannot accumulate over a long ride.
        if values.overwrittenCount > 0, values.overwrittenCount % 4096 == 0 { sum = 0; for k in 0..<values.count { sum += values[k] } }
        return sum / Double(values.count)
    }
}

/// The ride's altitude, total ascent and descent and grade, from a barometer when one delivers
/// and from GPS otherwise (docs/gps.md, "Altitude and climbing"):
/// - barometer: altitude from pressure, offset to GPS altitude by averaging good 3D fixes
///   (`calibrationFixesMin` of them; later fixes move it slowly, for the weather); ascent and
///   descent from the pressure altitude with `barometerThresholdM` of hysteresis (the offset
///   never counts as climbing);
/// - GPS only: altitude smoothed over `gpsSmoothingCount` fixes, `gpsThresholdM` of hysteresis.
/// - grade over the last `gradeWindowM` of distance.
/// One value per second at most of each (the ride records at 1 Hz).
public struct Altimetry: Sendable {
    public struct Settings: Sendable, Hashable {
        /// Hysteresis for ascent from the barometer, m.
        public var barometerThresholdM = 1.0
        /// Hysteresis for ascent from GPS altitude (smoothed), m.
        public var gpsThresholdM = 3.0
        /// GPS altitudes averaged (1 Hz fixes).
        public var gpsSmoothingCount = 10
        /// A fix good enough to calibrate the barometer: 3D with epv at most this, m.
        public var calibrationVerticalErrorMaxM = 35.0
        /// Good fixes averaged for the first calibration.
        public var calibrationFixesMin = 20
        /// After the first calibration, each good fix moves the offset by 1/this of the
        /// difference (about 10 minutes at 1 Hz: weather drift, not GPS noise).
        public var calibrationFollowFixes = 600.0
        /// Grade window and the least distance in it for a grade, m.
        public var gradeWindowM = 50.0
        public var gradeMinimumM = 20.0
        /// The barometer counts as delivering while its last reading is this recent, ms.
        public var barometerStaleMs: Int64 = 3_000

        public init() {}
    }

    /// Grades beyond ±this are clipped (nothing rideable is steeper), %.
    public static let gradeLimitPercent = 40.0

    public enum Source: UInt8, Sendable, Hashable { case none, barometer, gps }

    public let settings: Settings
    public private(set) var source: Source = .none
    public private(set) var counter: AscentCounter
    public private(set) var altitudeM: Double?
    public private(set) var gradePercent: Double?
    /// Barometric altitude + this = altitude above sea level (nil: not calibrated yet).
    public private(set) var calibrationOffsetM: Double?
    public private(set) var calibrationFixes = 0
    var calibrationSum = 0.0
    var pressureAltitudeM: Double?
    var barometerAt: MonotonicInstant?
    var gpsSmoothing: MovingAverage
    var grade: GradeWindow
    var distanceM: Double?
    var counterSource: Source = .none

    public init(settings: Settings = Settings()) {
        self.settings = settings
        counter = AscentCounter(thresholdM: settings.barometerThresholdM)
        gpsSmoothing = MovingAverage(count: settings.gpsSmoothingCount)
        grade = GradeWindow(windowM: settings.gradeWindowM, minimumM: settings.gradeMinimumM)
    }

    public var ascentM: Double { counter.ascentM }
    public var descentM: Double { counter.descentM }

    func barometerDelivering(at now: MonotonicInstant) -> Bool {
        barometerAt.map { now.milliseconds(since: $0) <= settings.barometerStaleMs } ?? false
    }

    /// The ride's distance (for the grade).
    public mutating func distance(_ m: Double) { distanceM = m }

    /// A barometer reading.
    public mutating func pressure(_ pa: Double, at now: MonotonicInstant, _ emit: (Sample) -> Void) {
        guard pa.isFinite, pa > 10_000, pa < 120_000 else { return }
        let h = PressureAltitude.altitudeM(pressurePa: pa)
        pressureAltitudeM = h
        barometerAt = now
        update(.barometer, counted: h, shown: h + (calibrationOffsetM ?? 0), at: now, emit)
    }

    /// A GPS fix's altitude (nil when the fix gave none).
    public mutating func gps(altitudeM alt: Double, verticalErrorM: Double?, at now: MonotonicInstant, _ emit: (Sample) -> Void) {
        guard alt.isFinite else { return }
        if let h = pressureAltitudeM, barometerDelivering(at: now), (verticalErrorM ?? .infinity) <= settings.calibrationVerticalErrorMaxM {
            calibrate(gps: alt, barometric: h)
        }
        let smoothed = gpsSmoothing.add(alt)
        guard !barometerDelivering(at: now) else { return }
        update(.gps, counted: smoothed, shown: smoothed, at: now, emit)
    }

    mutating func calibrate(gps: Double, barometric: Double) {
        let offset = gps - barometric
        calibrationFixes += 1
        if calibrationFixes <= settings.calibrationFixesMin {
            calibrationSum += offset
            calibrationOffsetM = calibrationSum / Double(calibrationFixes)
        } else if let o = calibrationOffsetM {
            calibrationOffsetM = o + (offset - o) / settings.calibrationFollowFixes
        }
    }

    mutating func update(_ from: Source, counted: Double, shown: Double, at now: MonotonicInstant, _ emit: (Sample) -> Void) {
        if from != counterSource {
            // A new source: its altitude scale differs; continue the totals from here.
            counter = AscentCounter(thresholdM: from == .barometer ? settings.barometerThresholdM : settings.gpsThresholdM)
                .continuing(counter)
            counter.rebase(counted)
            grade.reset()
            counterSource = from
        }
        source = from
        counter.add(counted)
        altitudeM = shown
        gradePercent = distanceM.flatMap { grade.add(distanceM: $0, altitudeM: counted) }
        emit(Sample(.altitude, shown, at: now, origin: from == .barometer ? .measured : .generated))
        emit(Sample(.ascent, counter.ascentM, at: now, origin: .generated))
        emit(Sample(.descent, counter.descentM, at: now, origin: .generated))
        if let g = gradePercent { emit(Sample(.grade, g, at: now, origin: .generated)) }
    }
}

extension AscentCounter {
    /// A counter with this one's threshold that carries on `other`'s totals.
    func continuing(_ other: AscentCounter) -> AscentCounter {
        var c = self
        c.ascentM = other.ascentM
        c.descentM = other.descentM
        return c
    }
}
