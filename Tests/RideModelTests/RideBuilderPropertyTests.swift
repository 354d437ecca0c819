import TestSupport
import Testing
@testable import RideModel

/// Random rides (samples, pauses, resumes, laps, recovery gaps, samples exactly at a pause or
/// the stop) fed to the builder; at many instants of each ride — after every event and at
/// random moments in between — every figure (ride, every lap, every interval bucket: timer time,
/// live average speed, distance, extremes, time-weighted averages, zone times, moving time, NP)
/// must equal a brute-force recomputation from the samples and events known at that instant,
/// done the slow, obvious way from the rule in docs/statistics.md.
struct RideBuilderPropertyTests {
    enum Step { case event(RideEvent.Kind, Int64, Int64), sample(Sample), check(Int64) }

    struct Ride {
        var steps: [Step] = []
        var samples: [Sample] = []
        var start: Int64 = 0
        var stop: Int64 = 0
        /// Running stretches [a, b), b = the pause, gap or stop instant.
        var stretches: [(Int64, Int64)] = []
        var laps: [Int64] = []
        /// Instants that end a stretch with a pause or the stop (where boundary samples may lie).
        var boundaryEnds: [Int64] = []
    }

    static let quantities: [Quantity] = [.heartRate, .power, .cadence, .speed, .distance]

    /// Events fall on instants ≡ 5 (mod 10) ms, samples on multiples of 10 ms, except boundary
    /// samples, which lie exactly on a pause or the stop and come after it.
    static func makeRide(seed: UInt64) -> Ride {
        var rng = SeededRandom(seed: seed)
        var ride = Ride()
        ride.start = 10_005
        var t = ride.start
        var running = true
        var stretchStart = t
        var events: [(Int64, RideEvent.Kind, Int64)] = [(t, .start, 0)]
        var downtime: [(Int64, Int64)] = []
        let segments = Int.random(in: 1...8, using: &rng)
        for _ in 0..<segments {
            t += Int64.random(in: 1...90, using: &rng) * 1_000 + Int64.random(in: 0...99, using: &rng) * 10
            if running, Int.random(in: 0..<6, using: &rng) == 0 {
                let g = Int64.random(in: 1...40, using: &rng) * 1_000
                events.append((t, .gap, g)); downtime.append((t, t + g))
                ride.stretches.append((stretchStart, t))
                t += g
                stretchStart = t
                continue
            }
            if running, Bool.random(using: &rng) {
                events.append((t, .lap, 0)); ride.laps.append(t)
                continue
            }
            events.append((t, running ? .pause : .resume, 0))
            if running { ride.stretches.append((stretchStart, t)); ride.boundaryEnds.append(t) } else { stretchStart = t }
            running.toggle()
        }
        t += Int64.random(in: 1...60, using: &rng) * 1_000
        ride.stop = t
        if running { ride.stretches.append((stretchStart, t)); ride.boundaryEnds.append(t) }
        events.append((t, .stop, 0))

        // Per quantity: how often it reports (some like a 1 Hz record, some sparse like smart
        // recording, with dropouts).
        for q in quantities {
            var st = ride.start - 2_995 // some samples before the start
            var cumulative = 0.0
            let regular = Bool.random(using: &rng)
            while st < ride.stop + 3_000 {
                let gap: Int64 = Int.random(in: 0..<20, using: &rng) == 0
                    ? Int64.random(in: 200...1_200, using: &rng) * 10   // a dropout of 2–12 s
                    : regular ? 1_000 : Int64.random(in: 5...250, using: &rng) * 10
                st += gap
                if downtime.contains(where: { st >= $0.0 && st < $0.1 }) { continue }
                let v: Double
                switch q {
                case .heartRate: v = Double(Int.random(in: 60...195, using: &rng))
                case .power: v = Int.random(in: 0..<6, using: &rng) == 0 ? 0 : Double(Int.random(in: 0...600, using: &rng))
                case .cadence: v = Int.random(in: 0..<4, using: &rng) == 0 ? 0 : Double(Int.random(in: 0...120, using: &rng))
                case .speed: v = Int.random(in: 0..<5, using: &rng) == 0 ? 0.4 : Double.random(in: 0...15, using: &rng)
                default:
                    cumulative += Double.random(in: 0...20, using: &rng)
                    if Int.random(in: 0..<50, using: &rng) == 0 { cumulative = 0 } // a counter reset
                    v = cumulative
                }
                ride.samples.append(Sample(q, v, at: MonotonicInstant(milliseconds: st)))
            }
        }
        // Samples exactly at some pauses and at the stop (the device's boundary readings).
        var boundary: [Sample] = []
        for e in ride.boundaryEnds where Bool.random(using: &rng) {
            for q in quantities where Bool.random(using: &rng) {
                let previous = ride.samples.last { $0.quantity == q && $0.instant.milliseconds < e }?.value ?? 0
                let v = q == .distance ? previous + Double.random(in: 0...5, using: &rng) : Double(Int.random(in: 0...200, using: &rng))
                boundary.append(Sample(q, v, at: MonotonicInstant(milliseconds: e)))
            }
        }
        // The boundary readings of distance must not go back in the counter's sequence: a
        // reading at e lies between its neighbours only by chance, so drop later readings that
        // it would make go backwards? No: a counter may go back (a reset), the rule handles it.
        ride.samples += boundary
        ride.samples.sort { ($0.instant, $0.quantity.rawValue) < ($1.instant, $1.quantity.rawValue) }

        // The steps in time order: an event before samples at the same instant; checks after
        // every event and at random instants.
        var ei = 0, si = 0
        while ei < events.count || si < ride.samples.count {
            let sampleAt = si < ride.samples.count ? ride.samples[si].instant.milliseconds : Int64.max
            if ei < events.count && events[ei].0 <= sampleAt {
                ride.steps.append(.event(events[ei].1, events[ei].0, events[ei].2))
                // the samples exactly at the event's instant come after it, then a check
                while si < ride.samples.count, ride.samples[si].instant.milliseconds == events[ei].0 {
                    ride.steps.append(.sample(ride.samples[si]))
                    si += 1
                }
                ride.steps.append(.check(events[ei].0))
                ei += 1
            } else {
                ride.steps.append(.sample(ride.samples[si]))
                let here = ride.samples[si].instant.milliseconds
                var next = ei < events.count ? events[ei].0 : Int64.max
                if si + 1 < ride.samples.count { next = min(next, ride.samples[si + 1].instant.milliseconds) }
                if next - here > 1, Int.random(in: 0..<12, using: &rng) == 0 {
                    ride.steps.append(.check(Int64.random(in: (here + 1)..<min(next, here + 20_000), using: &rng)))
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
        s.sampleHoldLimitMs = 2_500
        s.samplePeriodMs = 1_000
        return s
    }()

    // MARK: The brute-force model (knowing the samples and events up to `t`)

    struct Expected {
        var stats: [Quantity: QuantityStatistics] = [:]
        var lapStats: [[Quantity: QuantityStatistics]] = []
        var timerMs: Int64 = 0
        var lapTimerMs: [Int64] = []
        var hrZones = [Int64](repeating: 0, count: 5)
        var powerZones = [Int64](repeating: 0, count: 7)
        var lapHrZones: [[Int64]] = []
        var lapPowerZones: [[Int64]] = []
        var distance = 0.0
        var lapDistance: [Double] = []
        var moving: Int64 = 0
        var lapMoving: [Int64] = []
        var buckets: [Int: [Quantity: QuantityStatistics]] = [:]
        var np: Double?
    }

    static func fresh(_ q: Quantity) -> QuantityStatistics {
        var s = QuantityStatistics()
        if q == .cadence { s.setZeroAveraging(.excludeZeros) }
        return s
    }

    static func expected(_ ride: Ride, at t: Int64) -> Expected {
        let H = settings.sampleHoldLimitMs, P = min(settings.samplePeriodMs, H)
        let stopped = t >= ride.stop
        // Stretches as known at t (an open one ends at +∞).
        let stretches = ride.stretches.filter { $0.0 <= t }.map { ($0.0, $0.1 <= t ? $0.1 : Int64.max) }
        func stretch(_ s: Int64) -> Int? { stretches.firstIndex { s >= $0.0 && s < $0.1 } }
        func timerAt(_ x: Int64) -> Int64 {
            var sum: Int64 = 0
            for (a, b) in ride.stretches where a <= x { sum += min(x, b) - a }
            return sum
        }
        let laps = ride.laps.filter { $0 <= t }
        let lapEdges = [ride.start] + laps + [stopped ? ride.stop : Int64.max]
        func lapIndex(_ x: Int64) -> Int { laps.filter { $0 <= x }.count }
        /// The lap a boundary sample at a stretch end belongs to: the one open just before it.
        func lapAtEnd(_ x: Int64) -> Int { laps.filter { $0 < x }.count }
        let isBoundaryEnd: (Int64) -> Bool = { e in ride.boundaryEnds.contains(e) && e <= t }

        var e = Expected()
        e.timerMs = timerAt(min(t, ride.stop))
        let nLaps = lapEdges.count - 1
        e.lapTimerMs = (0..<nLaps).map { timerAt(min(lapEdges[$0 + 1], t, ride.stop)) - timerAt(lapEdges[$0]) }
        e.lapStats = Array(repeating: [:], count: nLaps)
        e.lapHrZones = Array(repeating: [Int64](repeating: 0, count: 5), count: nLaps)
        e.lapPowerZones = Array(repeating: [Int64](repeating: 0, count: 7), count: nLaps)
        e.lapDistance = Array(repeating: 0, count: nLaps)
        e.lapMoving = Array(repeating: 0, count: nLaps)
        var npBins: [Int64: (Double, Int64)] = [:]
        let hrZones = settings.heartRateZones!, powerZones = settings.powerZones!

        for q in quantities {
            let qs = ride.samples.filter { $0.quantity == q && $0.instant.milliseconds <= t }
            var stats = fresh(q)
            for (i, s) in qs.enumerated() {
                let x = s.instant.milliseconds
                guard x >= ride.start, x <= ride.stop else { continue }
                let k = stretch(x)
                let atEnd = k == nil && isBoundaryEnd(x)
                guard k != nil || atEnd else { continue }
                let lap = atEnd ? lapAtEnd(x) : lapIndex(x)
                func observe() {
                    stats.observe(s.value)
                    e.lapStats[lap][q, default: fresh(q)].observe(s.value)
                }
                if q == .distance {
                    if i > 0 {
                        let p = qs[i - 1].instant.milliseconds
                        let sameStretch = k != nil ? stretch(p) == k : (stretch(p).map { stretches[$0].1 == x } ?? false) || p == x
                        if sameStretch, p >= ride.start {
                            let d = s.value - qs[i - 1].value
                            if d > 0 { e.distance += d; e.lapDistance[lap] += d }
                        }
                    }
                    observe()
                    continue
                }
                observe()
                if atEnd {
                    e.buckets[Int(max(0, timerAt(x) - 1) / settings.intervalMs), default: [:]][q, default: fresh(q)].observe(s.value)
                    continue
                }
                let timer = timerAt(x)
                e.buckets[Int(timer / settings.intervalMs), default: [:]][q, default: fresh(q)].observe(s.value)
                // How long the value counts (docs/statistics.md), as known at t.
                let E = stretches[k!].1
                let next = i + 1 < qs.count ? qs[i + 1].instant.milliseconds : Int64.max
                var end: Int64
                if next <= t, next <= min(E, x + H) {
                    end = next
                } else if E <= t, E <= x + H {
                    end = E
                } else {
                    let lStar = lapEdges.filter { $0 > x && $0 <= x + H && $0 <= t && $0 < E }.max() ?? x
                    end = min(t, E, max(x + P, lStar))
                }
                guard end > x else { continue }
                stats.weigh(s.value, durationMs: end - x)
                for l in 0..<nLaps {
                    let lo = max(x, lapEdges[l]), hi = min(end, lapEdges[l + 1])
                    if hi > lo {
                        e.lapStats[l][q, default: fresh(q)].weigh(s.value, durationMs: hi - lo)
                        if q == .heartRate { e.lapHrZones[l][hrZones.zone(of: s.value)] += hi - lo }
                        if q == .power { e.lapPowerZones[l][powerZones.zone(of: s.value)] += hi - lo }
                        if q == .speed, s.value >= settings.movingSpeedMps { e.lapMoving[l] += hi - lo }
                    }
                }
                // buckets and NP bins in timer time, one piece at a time (slow and obvious)
                var ms = timer
                while ms < timer + (end - x) {
                    let bucket = Int(ms / settings.intervalMs)
                    let pieceEnd = min(timer + (end - x), Int64(bucket + 1) * settings.intervalMs, (ms / 1000 + 1) * 1000)
                    e.buckets[bucket, default: [:]][q, default: fresh(q)].weigh(s.value, durationMs: pieceEnd - ms)
                    if q == .power {
                        let bin = npBins[ms / 1000] ?? (0, 0)
                        npBins[ms / 1000] = (bin.0 + s.value * Double(pieceEnd - ms), bin.1 + pieceEnd - ms)
                    }
                    ms = pieceEnd
                }
                if q == .heartRate { e.hrZones[hrZones.zone(of: s.value)] += end - x }
                if q == .power { e.powerZones[powerZones.zone(of: s.value)] += end - x }
                if q == .speed, s.value >= settings.movingSpeedMps { e.moving += end - x }
            }
            e.stats[q] = stats
        }
        // NP: 1 s averages in order (the newest second still open until the stop), 30 s rolling
        // mean, 4th-power mean, 4th root.
        var keys = npBins.keys.sorted()
        if !stopped, !keys.isEmpty { keys.removeLast() }
        let seconds = keys.map { npBins[$0]!.0 / Double(npBins[$0]!.1) }
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
            && close(got.averageIncludingZeros, want.averageIncludingZeros)
    }

    /// Compares every figure of `b` at `t` with the brute force; returns the number of checks.
    @discardableResult
    static func compare(_ b: RideBuilder, _ ride: Ride, at t: Int64, _ seed: UInt64) -> Int {
        guard t >= ride.start else { return 0 }
        let e = expected(ride, at: t)
        let now = MonotonicInstant(milliseconds: t)
        let id = "seed \(seed) at \(t) ms"
        let live = b.statistics(at: now)
        #expect(b.timerTimeMs(at: now) == e.timerMs, "\(id): timer \(b.timerTimeMs(at: now)) vs \(e.timerMs)")
        #expect(live.timerTimeMs == e.timerMs, "\(id): live statistics' timer")
        #expect(b.laps.count == e.lapTimerMs.count, "\(id): laps")
        guard b.laps.count == e.lapTimerMs.count else { return 0 }
        for q in Self.quantities {
            #expect(Self.same(b.ride[q], e.stats[q] ?? fresh(q)), "\(id) ride \(q): \(b.ride[q]) vs \(String(describing: e.stats[q]))")
        }
        #expect(Self.close(b.ride.distanceM, e.distance), "\(id): distance \(b.ride.distanceM) vs \(e.distance)")
        if e.distance > 0 && e.timerMs > 0 {
            #expect(Self.close(live.averageSpeedMps, e.distance / (Double(e.timerMs) / 1000)), "\(id): live average speed")
        }
        #expect(b.ride.movingTimeMs == e.moving, "\(id): moving time \(b.ride.movingTimeMs) vs \(e.moving)")
        for (i, _) in b.laps.enumerated() {
            let lap = b.lapStatistics(i, at: now)
            #expect(lap.timerTimeMs == e.lapTimerMs[i], "\(id) lap \(i) timer \(lap.timerTimeMs) vs \(e.lapTimerMs[i])")
            #expect(Self.close(lap.distanceM, e.lapDistance[i]), "\(id) lap \(i) distance")
            #expect(lap.movingTimeMs == e.lapMoving[i], "\(id) lap \(i) moving time")
            if e.lapDistance[i] > 0 && e.lapTimerMs[i] > 0 {
                #expect(Self.close(lap.averageSpeedMps, e.lapDistance[i] / (Double(e.lapTimerMs[i]) / 1000)), "\(id) lap \(i) live average speed")
            }
            for q in Self.quantities {
                #expect(Self.same(lap[q], e.lapStats[i][q] ?? fresh(q)), "\(id) lap \(i) \(q): \(lap[q]) vs \(String(describing: e.lapStats[i][q]))")
            }
            #expect(b.laps[i].heartRateZoneTimes.values == e.lapHrZones[i], "\(id) lap \(i) hr zones")
            #expect(b.laps[i].powerZoneTimes.values == e.lapPowerZones[i], "\(id) lap \(i) power zones")
        }
        #expect(b.heartRateZoneTimes.values == e.hrZones, "\(id): hr zones \(b.heartRateZoneTimes.values) vs \(e.hrZones)")
        #expect(b.powerZoneTimes.values == e.powerZones, "\(id): power zones")
        #expect(b.heartRateZoneTimes.totalMs == b.ride[.heartRate].weightMs, "\(id): time in zones = timer time with data")
        for bucket in 0..<max(b.intervals.bucketCount, (e.buckets.keys.max() ?? -1) + 1) {
            for q in IntervalTable.chartedQuantities where Self.quantities.contains(q) {
                let want = e.buckets[bucket]?[q] ?? fresh(q)
                #expect(Self.same(b.intervals.statistics(bucket: bucket, q), want), "\(id) bucket \(bucket) \(q)")
            }
        }
        #expect(Self.close(b.normalizedPowerW, e.np, 1e-9), "\(id): NP \(String(describing: b.normalizedPowerW)) vs \(String(describing: e.np))")
        return 1
    }

    @Test(arguments: 0..<40)
    func figuresEqualBruteForceAtEveryInstant(seedIndex: Int) {
        let seed = UInt64(seedIndex) &* 0x1234_5678_9ABC + 17
        let ride = Self.makeRide(seed: seed)
        var b = RideBuilder(settings: Self.settings)
        var checks = 0
        for step in ride.steps {
            switch step {
            case .event(let kind, let t, let value):
                let at = MonotonicInstant(milliseconds: t)
                switch kind {
                case .start: try! b.start(at: at)
                case .pause: try! b.pause(at: at)
                case .resume: try! b.resume(at: at)
                case .lap: try! b.lap(at: at)
                case .stop: try! b.stop(at: at)
                case .gap: try! b.mark(RideEvent(.gap, at: at, value: value))
                default: break
                }
            case .sample(let s): try? b.add(s)
            case .check(let t):
                b.advance(to: MonotonicInstant(milliseconds: t))
                checks += Self.compare(b, ride, at: t, seed)
            }
        }
        checks += Self.compare(b, ride, at: ride.stop, seed)
        #expect(checks > 3)
        #expect(b.laps.map { $0.statistics.timerTimeMs }.reduce(0, +) == b.timerTimeMs(at: MonotonicInstant(milliseconds: ride.stop)),
                "laps partition the timer time")
    }
}
