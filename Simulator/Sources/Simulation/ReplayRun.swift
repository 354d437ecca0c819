import AppCore
import Device
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
        public var description: String { "the file has no record messages to replay" }
    }

    enum Step {
        case input(AppInput)
        case command(ControlCommand)
    }

    public let activity: FITActivity
    public let runtime: DeviceRuntime
    public let archive: MemoryArchive
    public let log = MemoryLog(capacity: 256)
    let summaries = SummaryRecorder()
    public private(set) var startUnixMs: Int64 = 0
    public private(set) var endMs: Int64 = 0
    var steps: [(atMs: Int64, order: Int, step: Step)] = []

    public init(activity: FITActivity, storage: RideStorage, screen: ScreenPort? = nil,
                configuration: AppConfiguration = AppConfiguration(), seed: UInt64 = 1) throws {
        guard let firstRecord = activity.records.first else { throw ReplayError.noRecords }
        self.activity = activity
        archive = MemoryArchive()
        let timerEvents = activity.events.filter { $0.event == 0 }
        let t0 = Int64(timerEvents.first(where: { $0.eventType == 0 })?.timestamp ?? firstRecord.timestamp)
        startUnixMs = (t0 + Self.fitEpochUnixS) * 1000 - Self.leadMs
        let wall = WallClockTime(unixMs: startUnixMs, trusted: true)
        let opened = storage.open(configuration: configuration, seed: seed, deviceNow: .zero, wallNow: wall)
        runtime = DeviceRuntime.boot(opened, archive: archive, screen: screen, log: log, wall: wall, at: .zero)
        _ = runtime.addObserver(summaries)
        plan(t0: t0, timerEvents: timerEvents)
    }

    func ms(_ fitTimestamp: UInt32, t0: Int64) -> Int64 { (Int64(fitTimestamp) - t0) * 1000 + Self.leadMs }

    func add(_ atMs: Int64, _ step: Step) { steps.append((atMs, steps.count, step)) }

    func plan(t0: Int64, timerEvents: [FITActivity.Event]) {
        let zero = MonotonicInstant.zero
        for role in SensorRole.allCases { add(0, .input(.sensor(SensorStatus(role, .connected), at: zero))) }
        add(0, .input(.button(ButtonEvent(.startPause, .down, at: zero))))
        add(100, .input(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: 100)))))
        // Pauses and resumes: a stop pauses (the press acts on the down edge); a start resumes
        // (while paused the button acts on release, so it goes down 120 ms earlier).
        var running = true
        var lastStopMs: Int64?
        for e in timerEvents.dropFirst() {
            let t = ms(e.timestamp, t0: t0)
            if e.eventType == 0, !running {
                add(t - 120, .input(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: t - 120)))))
                add(t, .input(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: t)))))
                running = true
            } else if e.eventType == 1 || e.eventType == 4, running {
                add(t, .input(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: t)))))
                add(t + 100, .input(.button(ButtonEvent(.startPause, .up, at: MonotonicInstant(milliseconds: t + 100)))))
                running = false
                lastStopMs = t
            }
        }
        // Laps: every lap but the last ends with a press of LAP.
        for lap in activity.laps.dropLast() {
            guard let ts = lap.timestamp else { continue }
            let t = ms(ts, t0: t0)
            add(t, .input(.button(ButtonEvent(.lap, .down, at: MonotonicInstant(milliseconds: t)))))
            add(t + 100, .input(.button(ButtonEvent(.lap, .up, at: MonotonicInstant(milliseconds: t + 100)))))
        }
        // Samples at their timestamps.
        for r in activity.records {
            let t = ms(r.timestamp, t0: t0)
            guard t >= 0 else { continue }
            let at = MonotonicInstant(milliseconds: t)
            if let v = r.heartRate { add(t, .input(.sample(Sample(.heartRate, v, at: at)))) }
            if let v = r.power { add(t, .input(.sample(Sample(.power, v, at: at)))) }
            if let v = r.cadence { add(t, .input(.sample(Sample(.cadence, v, at: at)))) }
            if let v = r.speedMps { add(t, .input(.sample(Sample(.speed, v, at: at)))) }
            if let v = r.distanceM { add(t, .input(.sample(Sample(.distance, v, at: at)))) }
        }
        // The end: pause if still running, then end and save.
        let lastRecordMs = ms(activity.records.last!.timestamp, t0: t0)
        let endAt = max(lastStopMs ?? lastRecordMs, running ? lastRecordMs + 1 : 0)
        if running { add(endAt, .input(.button(ButtonEvent(.startPause, .down, at: MonotonicInstant(milliseconds: endAt))))) }
        add(endAt + 200, .command(.end))
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
            while i < steps.count, steps[i].atMs <= nowMs {
                switch steps[i].step {
                case .input(let input): runtime.handle(input)
                case .command(let c): runtime.command(c, at: now)
                }
                i += 1
            }
            if nowMs >= nextTickMs || (runtime.nextDeadline.map { $0.milliseconds <= nowMs } ?? false) {
                runtime.handle(.tick(now))
                if nowMs >= nextTickMs { nextTickMs = (nowMs / 1000 + 1) * 1000 }
            }
            if i >= steps.count && nowMs >= endMs { break }
        }
    }

    /// summary.json of the replayed ride.
    public var summaryJSON: String? { summaries.lastFinishedJSON }

    /// The recording device's own session summary, for comparison.
    public var deviceSession: FITActivity.Summary? { activity.sessions.first }
}
