import TestSupport
import Testing
@testable import RideModel

/// Random rides (samples, pauses, resumes, laps) fed to the builder; every statistic must equal
/// a brute-force recomputation from the same events and samples, done the slow, obvious way.
struct RideBuilderPropertyTests {
    enum Step { case event(RideEvent.Kind, Int64), sample(Sample), advance(Int64) }

    struct Ride {
        var steps: [Step] = []
        var samples: [Sample] = []
        var start: Int64 = 0
        var stop: Int64 = 0
        var pauses: [Int64] = []
        var resumes: [Int64] = []
        var laps: [Int64] = []
    }

    static let quantities: [Quantity] = [.heartRate, .power, .cadence, .speed, .distance]

    /// Events fall on instants ≡ 5 (mod 10) ms, samples on multiples of 10 ms: never the same instant.
    static func makeRide(seed: UInt64) -> Ride {
        var rng = SeededRandom(seed: seed)
        var ride = Ride()
        ride.start = 10_005
        var t = ride.start
        var running = true
        var events: [(Int64, RideEvent.Kind)] = [(t, .start)]
        let segments = Int.random(in: 1...8, using: &rng)
        for _ in 0..<segments {
            t += Int64.random(in: 1...90, using: &rng) * 1_000 + Int64.random(in: 0...99, using: &rng) * 10
            if running, Bool.random(using: &rng) {
                events.append((t, .lap)); ride.laps.append(t)
                continue
            }
            events.append((t, running ? .pause : .resume))
            if running { ride.pauses.append(t) } else { ride.resumes.append(t) }
            running.toggle()
        }
        t += Int64.random(in: 1...60, using: &rng) * 1_000
        ride.stop = t
        events.append((t, .stop))

        for q in quantities {
            var st = ride.start - 2_995 // some samples before the start
            var cumulative = 0.0
            while st < ride.stop + 3_000 {
                let gap: Int64 = Int.random(in: 0..<20, using: &rng) == 0
                    ? Int64.random(in: 500...1_200, using: &rng) * 10   // a dropout of 5–12 s
                    : Int64.random(in: 5...150, using: &rng) * 10
                st += gap
                let v: Double
                switch q {
                case .heartRate: v = Double(Int.random(in: 60...195, using: &rng))
                case .power: v = Double(Int.random(in: 0...600, using: &rng))
                case .cadence: v = Double(Int.random(in: 0...120, using: &rng))
                case .speed: v = Double.random(in: 0...15, using: &rng)
                default:
                    cumulative += Double.random(in: 0...20, using: &rng)
                    if Int.random(in: 0..<50, using: &rng) == 0 { cumulative = 0 } // a counter reset
                    v = cumulative
                }
                ride.samples.append(Sample(q, v, at: MonotonicInstant(milliseconds: st)))
            }
        }
        ride.samples.sort { $0.instant < $1.instant }
        var ei = 0, si = 0
        while ei < events.count || si < ride.samples.count {
            if si >= ride.samples.count || (ei < events.count && events[ei].0 < ride.samples[si].instant.milliseconds) {
                ride.steps.append(.event(events[ei].1, events[ei].0))
                ei += 1
            } else {
                ride.steps.append(.sample(ride.samples[si]))
                // sometimes let time pass (a tick) before the next step, in time order
                let here = ride.samples[si].instant.milliseconds
                var next = ei < events.count ? events[ei].0 : Int64.max
                if si + 1 < ride.samples.count { next = min(next, ride.samples[si + 1].instant.milliseconds) }
                if next - here > 1, Int.random(in: 0..<5, using: &rng) == 0 {
                    ride.steps.append(.advance(Int64.random(in: (here + 1)..<next, using: &rng)))
                }
                si += 1
            }
        }
        return ride
    }

    static let settings: RideSettings = {
        var s = RideSettings(ftpW: 250,
                             heartRateZones: .defaultHeartRate,
                             powerZones: try! ZoneConfiguration(quantity: .power, boundaries: [138, 188, 225, 263, 300, 375]),
                             intervalMs: 10_000, intervalBucketsMax: 2_000)
        s.sampleHoldLimitMs = 5_000
        return s
    }()

    static func feed(_ ride: Ride) -> RideBuilder {
        var b = RideBuilder(settings: settings)
        var lastEvent: Int64 = 0
        for step in ride.steps {
            switch step {
            case .event(let kind, let t):
                let at = MonotonicInstant(milliseconds: t)
                lastEvent = t
                switch kind {
                case .start: try! b.start(at: at)
                case .pause: try! b.pause(at: at)
                case .resume: try! b.resume(at: at)
                case .lap: try! b.lap(at: at)
                case .stop: try! b.stop(at: at)
                default: break
                }
            case .sample(let s): try? b.add(s)
            case .advance(let t):
                #expect(t > lastEvent)
                b.advance(to: MonotonicInstant(milliseconds: t))
            }
        }
        return b
    }

    // MARK: The brute-force model

    struct Expected {
        var stats: [Quantity: QuantityStatistics] = [:]
        var lapStats: [[Quantity: QuantityStatistics]] = []
        var timerMs: Int64 = 0
        var lapTimerMs: [Int64] = []
        var hrZones = [Int64](repeating: 0, count: 5)
        var powerZones = [Int64](repeating: 0, count: 7)
        var lapHrZones: [[Int64]] = []
        var distance = 0.0
        var lapDistance: [Double] = []
        var buckets: [Int: [Quantity: QuantityStatistics]] = [:]
        var np: Double?
    }

    static func expected(_ ride: Ride) -> Expected {
        // Running stretches [a, b).
        var stretches: [(Int64, Int64)] = []
        var a = ride.start
        let resumes = ride.resumes
        for (i, p) in ride.pauses.enumerated() {
            stretches.append((a, p))
            if i < resumes.count { a = resumes[i] } else { a = -1 }
        }
        if a >= 0 { stretches.append((a, ride.stop)) }
        func stretch(_ t: Int64) -> Int? { stretches.firstIndex { t >= $0.0 && t < $0.1 } }
        func timerAt(_ t: Int64) -> Int64 {
            var sum: Int64 = 0
            for (x, y) in stretches {
                if t >= y { sum += y - x } else if t >= x { sum += t - x }
            }
            return sum
        }
        let lapEdges = [ride.start] + ride.laps + [ride.stop]
        func lapIndex(_ t: Int64) -> Int { ride.laps.filter { $0 <= t }.count }

        var e = Expected()
        e.timerMs = timerAt(ride.stop)
        e.lapTimerMs = (0..<(lapEdges.count - 1)).map { timerAt(lapEdges[$0 + 1]) - timerAt(lapEdges[$0]) }
        e.lapStats = Array(repeating: [:], count: lapEdges.count - 1)
        e.lapHrZones = Array(repeating: [Int64](repeating: 0, count: 5), count: lapEdges.count - 1)
        e.lapDistance = Array(repeating: 0, count: lapEdges.count - 1)
        var npBins: [Int64: (Double, Int64)] = [:]
        let hrZones = settings.heartRateZones!, powerZones = settings.powerZones!

        for q in quantities {
            let qs = ride.samples.filter { $0.quantity == q }
            var stats = QuantityStatistics()
            for (i, s) in qs.enumerated() {
                let t = s.instant.milliseconds
                guard t >= ride.start, t < ride.stop, let k = stretch(t) else { continue }
                let lap = lapIndex(t)
                if q == .distance {
                    if i > 0, stretch(qs[i - 1].instant.milliseconds) == k, qs[i - 1].instant.milliseconds >= ride.start {
                        let d = s.value - qs[i - 1].value
                        if d > 0 { e.distance += d; e.lapDistance[lap] += d }
                    }
                    stats.observe(s.value)
                    e.lapStats[lap][q, default: QuantityStatistics()].observe(s.value)
                    continue
                }
                stats.observe(s.value)
                e.lapStats[lap][q, default: QuantityStatistics()].observe(s.value)
                let timer = timerAt(t)
                e.buckets[Int(timer / settings.intervalMs), default: [:]][q, default: QuantityStatistics()].observe(s.value)
                var end = min(t + settings.sampleHoldLimitMs, stretches[k].1)
                if i + 1 < qs.count { end = min(end, qs[i + 1].instant.milliseconds) }
                guard end > t else { continue }
                stats.weigh(s.value, durationMs: end - t)
                // per lap: overlap with each lap's span, a millisecond-exact split
                for l in 0..<(lapEdges.count - 1) {
                    let lo = max(t, lapEdges[l]), hi = min(end, lapEdges[l + 1])
                    if hi > lo {
                        e.lapStats[l][q, default: QuantityStatistics()].weigh(s.value, durationMs: hi - lo)
                        if q == .heartRate { e.lapHrZones[l][hrZones.zone(of: s.value)] += hi - lo }
                    }
                }
                // buckets and NP bins in timer time, one millisecond step at a time (slow and obvious)
                var ms = timer
                while ms < timer + (end - t) {
                    let bucket = Int(ms / settings.intervalMs)
                    let bucketEnd = Int64(bucket + 1) * settings.intervalMs
                    let secondEnd = (ms / 1000 + 1) * 1000
                    let pieceEnd = min(timer + (end - t), bucketEnd, secondEnd)
                    e.buckets[bucket, default: [:]][q, default: QuantityStatistics()].weigh(s.value, durationMs: pieceEnd - ms)
                    if q == .power {
                        let bin = npBins[ms / 1000] ?? (0, 0)
                        npBins[ms / 1000] = (bin.0 + s.value * Double(pieceEnd - ms), bin.1 + pieceEnd - ms)
                    }
                    ms = pieceEnd
                }
                if q == .heartRate { e.hrZones[hrZones.zone(of: s.value)] += end - t }
                if q == .power { e.powerZones[powerZones.zone(of: s.value)] += end - t }
            }
            e.stats[q] = stats
        }
        // NP: 1 s averages in order, 30 s rolling mean, 4th-power mean, 4th root.
        let seconds = npBins.keys.sorted().map { npBins[$0]!.0 / Double(npBins[$0]!.1) }
        if seconds.count >= 30 {
            var sum4 = 0.0
            for i in 29..<seconds.count {
                let m = seconds[(i - 29)...i].reduce(0, +) / 30
                sum4 += m * m * m * m
            }
            e.np = (sum4 / Double(seconds.count - 29)).squareRoot().squareRoot()
        }
        return e
    }

    static func close(_ a: Double?, _ b: Double?, _ tol: Double = 1e-9) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return abs(x - y) <= tol * max(1, abs(x), abs(y))
        default: return false
        }
    }

    static func same(_ got: QuantityStatistics, _ want: QuantityStatistics) -> Bool {
        got.count == want.count && got.min == want.min && got.max == want.max
            && got.mostRecent == want.mostRecent && got.weightMs == want.weightMs && close(got.average, want.average)
    }

    @Test(arguments: 0..<60)
    func statisticsEqualBruteForce(seedIndex: Int) {
        let seed = UInt64(seedIndex) &* 0x1234_5678_9ABC + 17
        let ride = Self.makeRide(seed: seed)
        let b = Self.feed(ride)
        let e = Self.expected(ride)
        let stop = MonotonicInstant(milliseconds: ride.stop)

        #expect(b.timerTimeMs(at: stop) == e.timerMs, "seed \(seed)")
        #expect(b.elapsedTimeMs(at: stop) == ride.stop - ride.start, "seed \(seed)")
        #expect(b.laps.count == ride.laps.count + 1, "seed \(seed)")
        for q in Self.quantities {
            #expect(Self.same(b.ride[q], e.stats[q] ?? QuantityStatistics()), "seed \(seed) ride \(q): \(b.ride[q]) vs \(String(describing: e.stats[q]))")
        }
        #expect(Self.close(b.ride.distanceM, e.distance), "seed \(seed) distance \(b.ride.distanceM) vs \(e.distance)")
        for (i, lap) in b.laps.enumerated() {
            #expect(lap.statistics.timerTimeMs == e.lapTimerMs[i], "seed \(seed) lap \(i) timer")
            #expect(Self.close(lap.statistics.distanceM, e.lapDistance[i]), "seed \(seed) lap \(i) distance")
            for q in Self.quantities {
                #expect(Self.same(lap.statistics[q], e.lapStats[i][q] ?? QuantityStatistics()), "seed \(seed) lap \(i) \(q)")
            }
            #expect(lap.heartRateZoneTimes.values == e.lapHrZones[i], "seed \(seed) lap \(i) hr zones")
        }
        #expect(b.laps.map { $0.statistics.timerTimeMs }.reduce(0, +) == e.timerMs, "laps partition the timer time")
        #expect(b.heartRateZoneTimes.values == e.hrZones, "seed \(seed) hr zones")
        #expect(b.powerZoneTimes.values == e.powerZones, "seed \(seed) power zones")
        #expect(b.heartRateZoneTimes.totalMs == b.ride[.heartRate].weightMs, "time in zones = timer time with data")
        for bucket in 0..<max(b.intervals.bucketCount, (e.buckets.keys.max() ?? -1) + 1) {
            for q in IntervalTable.chartedQuantities where Self.quantities.contains(q) {
                let want = e.buckets[bucket]?[q] ?? QuantityStatistics()
                #expect(Self.same(b.intervals.statistics(bucket: bucket, q), want), "seed \(seed) bucket \(bucket) \(q)")
            }
        }
        #expect(Self.close(b.normalizedPowerW, e.np, 1e-9), "seed \(seed) NP \(String(describing: b.normalizedPowerW)) vs \(String(describing: e.np))")
    }
}
