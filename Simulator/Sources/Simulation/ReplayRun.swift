import AppCore
import Device
import Navigation
import RideFiles
import RideModel

/// Replays a recorded FIT activity through the app: its records become live samples at their
/// timestamps, its timer start/stop events and laps become button presses, and the device's own
/// runtime, journal and statistics make the ride. The app's summary can then be compared with the
/// recording device's (see docs/simulator.md for where and why they differ).
public final class ReplayRun {
    /// FIT timestamps count seconds from 1989-12-31T00:00:00Z.
    public static let fitEpochUnixS: Int64 = 631_065_600
    /// The start button is pressed this long before the recording's first timer start, so the
    /// countdown ends exactly when the recorded ride began.
    public static let leadMs: Int64 = 4_000

    public enum ReplayError: Error, CustomStringConvertible {
        case noRecords
        /// file_id.type is not activity (4): a course, locations, settings... are no ride.
        case notAnActivity(UInt8)
        public var description: String {
            switch self {
            case .noRecords: "the file has no record messages to replay"
            case .notAnActivity(let t): "the file is \(FITActivity.fileTypeName(t)), not a recorded activity: there is no ride to replay"
            }
        }
    }

    enum Step {
        case input(AppInput)
        case command(ControlCommand)
        /// A command handled after the tick of its instant (the end comes after the record of
        /// the stop's second).
        case commandAfterTick(ControlCommand)
        /// Raw input for the runtime's input path (the recorded altitude as barometer registers).
        case raw(ReplayRawInput)
    }

    public let activity: FITActivity
    public let runtime: DeviceRuntime
    public let archive: MemoryArchive
    public let log = MemoryLog(capacity: 256)
    public let courseStore = MemoryCourseStore()
    let summaries = SummaryRecorder()
    public private(set) var startUnixMs: Int64 = 0
    public private(set) var endMs: Int64 = 0
    var steps: [(atMs: Int64, order: Int, step: Step)] = []

    /// - course: a course to follow (`bikesim --replay RIDE.fit --course FILE`), loaded before
    ///   the ride starts; the recorded positions follow it or not.
    public init(activity: FITActivity, storage: RideStorage, screen: ScreenPort? = nil,
                configuration: AppConfiguration = AppConfiguration(), seed: UInt64 = 1, course: Course? = nil) throws {
        if let t = activity.fileType, t != 4 { throw ReplayError.notAnActivity(t) }
        guard let firstRecord = activity.records.first else { throw ReplayError.noRecords }
        self.activity = activity
        archive = MemoryArchive()
        let timerEvents = activity.events.filter { $0.event == 0 }.sorted { $0.timestamp < $1.timestamp }
        let t0 = Int64(activity.startTimestamp ?? firstRecord.timestamp)
        startUnixMs = (t0 + Self.fitEpochUnixS) * 1000 - Self.leadMs
        let wall = WallClockTime(unixMs: startUnixMs, trusted: true)
        var configuration = configuration
        configuration.ride.sampleHoldLimitMs = max(configuration.ride.sampleHoldLimitMs, Self.holdLimitMs(activity))
        let opened = storage.open(configuration: configuration, seed: seed, deviceNow: .zero, wallNow: wall)
        runtime = DeviceRuntime.boot(opened, archive: archive, screen: screen, log: log, sensors: Self.positionSources,
                                     wall: wall, at: .zero)
        _ = runtime.addObserver(summaries)
        if let course {
            courseStore.add(course)
            runtime.courseStore = courseStore
            add(0, .command(.loadCourse(course)))
        }
        plan(t0: t0, timerEvents: timerEvents, countdownMs: Int64(configuration.countdownSeconds) * 1000)
    }

    func ms(_ fitTimestamp: UInt32, t0: Int64) -> Int64 { (Int64(fitTimestamp) - t0) * 1000 + Self.leadMs }

    func add(_ atMs: Int64, _ step: Step) { steps.append((atMs, steps.count, step)) }

    /// FIT event_type values that stop the timer: stop, stop_all, stop_disable, stop_disable_all.
    static let stopTypes: Set<UInt8> = [1, 4, 8, 9]

    /// The FIT sensor role behind each replayed quantity.
    static func role(_ q: Quantity) -> SensorRole {
        switch q {
        case .heartRate: .heartRate
        case .power: .power
        case .cadence: .cadence
        default: .speed
        }
    }

    /// The first record time in `sorted` strictly between `a` and `b`.
    static func firstRecord(in sorted: [UInt32], after a: UInt32, before b: UInt32) -> UInt32? {
        var lo = 0, hi = sorted.count
        while lo < hi { let mid = (lo + hi) / 2; if sorted[mid] <= a { lo = mid + 1 } else { hi = mid } }
        return lo < sorted.count && sorted[lo] < b ? sorted[lo] : nil
    }

    /// The longest time between two records of the file, ms: a replay bridges the unit's own
    /// record spacing ("smart recording") as the unit counted it (docs/statistics.md).
    public static func holdLimitMs(_ activity: FITActivity) -> Int64 {
        var longest: Int64 = 1
        var previous: UInt32?
        for r in activity.records.sorted(by: { $0.timestamp < $1.timestamp }) {
            if let p = previous { longest = max(longest, Int64(r.timestamp) - Int64(p)) }
            previous = r.timestamp
        }
        return min(3_600, longest + 1) * 1000
    }

    func plan(t0: Int64, timerEvents: [FITActivity.Event], countdownMs: Int64) {
        let zero = MonotonicInstant.zero
        add(0, .raw(.barometerCalibration))
        for role in SensorRole.allCases { add(0, .input(.sensor(SensorStatus(role, .connected), at: zero))) }
        // START acts on its press: pressed one countdown before the recording's first timer start,
        // the ride starts exactly then.
        let press = max(0, Self.leadMs - countdownMs)
        add(press, .input(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: press)))))
        add(press + 100, .input(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: press + 100)))))
        // Pauses and resumes: a stop pauses (the press acts on the down edge); a start resumes
        // (while paused the button acts on release, so it goes down 120 ms earlier). Both come
        // before the record of the same second (steps at one instant keep their order).
        var running = true
        var lastStopMs: Int64?
        var lastStopTimestamp: UInt32?
        var lastStopWasAuto = false
        var resumes: [Int64] = []
        var runningAt: [(Int64, Bool)] = [(ms(UInt32(clamping: t0), t0: t0), true)]
        let recordTimes = activity.records.map(\.timestamp).sorted()
        func resume(at t: Int64) {
            add(t - 120, .input(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: t - 120)))))
            add(t, .input(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: t)))))
            running = true
            resumes.append(t)
            runningAt.append((t, true))
        }
        for e in timerEvents where e.timestamp >= t0 {
            let t = ms(e.timestamp, t0: t0)
            if e.eventType == 0, !running {
                resume(at: t)
            } else if Self.stopTypes.contains(e.eventType) {
                // A stop while stopped after records were written since the last stop: the unit
                // started its timer again without a start event (a Garmin Oregon does), at the
                // first of those records. One record alone is the one a unit writes as the rider
                // stops it (an Edge 500 auto-paused, wrote a record and was stopped 4 s later: its
                // timer did not run again).
                if !running, let previous = lastStopTimestamp,
                   let r = Self.firstRecord(in: recordTimes, after: previous, before: e.timestamp),
                   Self.firstRecord(in: recordTimes, after: r, before: e.timestamp) != nil {
                    resume(at: ms(r, t0: t0))
                }
                lastStopMs = t // the file's own last stop, also one repeated while stopped
                guard running else { continue }
                add(t, .input(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: t)))))
                add(t + 100, .input(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: t + 100)))))
                running = false
                runningAt.append((t, false))
                lastStopTimestamp = e.timestamp
                lastStopWasAuto = e.data == 1 // timer_trigger auto
            }
        }
        // A ride ended while auto-paused, with no record after the auto-pause, ended at the
        // auto-pause: the unit counts no elapsed time after it (an Edge 800 auto-paused, then was
        // stopped 6 min later; its elapsed time ends at the auto-pause).
        if !running, lastStopWasAuto, let ts = lastStopTimestamp, recordTimes.last.map({ $0 <= ts }) ?? true {
            lastStopMs = ms(ts, t0: t0)
        }
        func isRunning(at t: Int64) -> Bool { runningAt.last { $0.0 <= t }?.1 ?? false }
        // Laps: every lap but the last ends with a press of LAP just after the record of its last
        // second (a lap message's timestamp is its last record's); a lap that ended while the
        // timer was stopped (or as it stopped) is made when it starts again, right after the
        // resume and before the record of that second (a lap needs a running ride).
        for lap in activity.laps.dropLast() {
            guard let ts = lap.timestamp else { continue }
            var t = ms(ts, t0: t0) + 1
            if !isRunning(at: t) {
                guard let r = resumes.first(where: { $0 >= t }) else { continue }
                t = r
            }
            add(t, .input(.button(ButtonEvent(.lap, .down, at: MonotonicInstant(milliseconds: t)))))
            add(t + 100, .input(.button(ButtonEvent(.lap, .up, at: MonotonicInstant(milliseconds: t + 100)))))
        }
        // Samples at their timestamps. A quantity a record leaves out that the record before had
        // is reported absent (its sensor stale) so that its last value is not carried over; a file
        // without distance gets the distance its speeds add up to (as the unit counted it).
        let records = activity.records.sorted { $0.timestamp < $1.timestamp }
        let hasDistance = records.contains { $0.distanceM != nil }
        // A record's distance is the activity's distance: 0 when its timer started. The ride's
        // first record (at the start) reads that 0; a record of the start's own second is read
        // by the next record.
        let startMs = ms(UInt32(clamping: t0), t0: t0)
        if hasDistance, !records.contains(where: { Int64($0.timestamp) < t0 && $0.distanceM != nil }) {
            add(startMs - 1, .input(.sample(Sample(.distance, 0, at: MonotonicInstant(milliseconds: startMs - 1)))))
        }
        var derivedDistance = 0.0
        var previous: FITActivity.Record?
        var present = Array(repeating: false, count: Quantity.countMax)
        for r in records {
            let t = ms(r.timestamp, t0: t0)
            guard t >= 0 else { previous = r; continue }
            let at = MonotonicInstant(milliseconds: t)
            var distance = r.distanceM
            if !hasDistance, let p = previous, let v = p.speedMps, isRunning(at: t - 1) {
                derivedDistance += v * Double(Int64(r.timestamp) - Int64(p.timestamp))
            }
            if !hasDistance, r.speedMps != nil { distance = derivedDistance }
            let values: [(Quantity, Double?)] = [(.heartRate, r.heartRate), (.power, r.power), (.cadence, r.cadence), (.speed, r.speedMps)]
            for (q, v) in values {
                let role = Self.role(q)
                if v == nil, present[q.index] { add(t, .input(.sensor(SensorStatus(role, .stale), at: at))) }
                if v != nil, !present[q.index], previous != nil { add(t, .input(.sensor(SensorStatus(role, .connected), at: at))) }
                present[q.index] = v != nil
                if let v { add(t, .input(.sample(Sample(q, v, at: at)))) }
            }
            planPosition(r, at: t)
            if let v = distance {
                let dt = t == startMs && hasDistance ? t + 1 : t
                add(dt, .input(.sample(Sample(.distance, v, at: MonotonicInstant(milliseconds: dt)))))
            }
            previous = r
        }
        // The end: at the file's own last timer stop; a file still running at its end stops at
        // its session's end (start + elapsed), else at its last record.
        let lastRecordMs = ms(records.last!.timestamp, t0: t0)
        var endAt = lastStopMs ?? lastRecordMs
        if running {
            endAt = lastRecordMs
            if let s = activity.sessions.last, let st = s.startTime, let el = s.elapsedS, el.isFinite, el >= 0, el < 1e7 {
                endAt = max(endAt, ms(st, t0: t0) + Int64((el * 1000).rounded()))
            } else if let ts = activity.sessions.last?.timestamp {
                endAt = max(endAt, ms(ts, t0: t0))
            }
        }
        add(endAt, .commandAfterTick(.end))
        endMs = endAt + 1_000
        steps.sort { ($0.atMs, $0.order) < ($1.atMs, $1.order) }
    }

    /// Runs the whole recording through the runtime, ticking every second and at deadlines.
    public func run() {
        var nextTickMs: Int64 = 0
        var i = 0
        var nowMs: Int64 = 0
        while i < steps.count || nowMs < endMs {
            var t = i < steps.count ? steps[i].atMs : endMs
            t = min(t, nextTickMs)
            if let d = runtime.nextDeadline { t = min(t, max(nowMs, d.milliseconds)) }
            nowMs = max(nowMs, t)
            let now = MonotonicInstant(milliseconds: nowMs)
            var late: [ControlCommand] = []
            while i < steps.count, steps[i].atMs <= nowMs {
                switch steps[i].step {
                case .input(let input): runtime.handle(input)
                case .command(let c): runtime.command(c, at: now)
                case .commandAfterTick(let c): late.append(c)
                case .raw(let r): r.send(to: runtime, at: now)
                }
                i += 1
            }
            if nowMs >= nextTickMs || (runtime.nextDeadline.map { $0.milliseconds <= nowMs } ?? false) || !late.isEmpty {
                runtime.handle(.tick(now))
                if nowMs >= nextTickMs { nextTickMs = (nowMs / 1000 + 1) * 1000 }
            }
            for c in late { runtime.command(c, at: now) }
            if i >= steps.count && nowMs >= endMs { break }
        }
    }

    /// summary.json of the replayed ride.
    public var summaryJSON: String? { summaries.lastFinishedJSON }

    /// The recording device's own session summary, for comparison.
    public var deviceSession: FITActivity.Summary? { activity.sessions.first }
}
