import TestSupport
import AppCore
import Device
import Journal
import RideModel


func ms(_ v: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: v) }

/// A scripted ride as a list of inputs: countdown, riding with 1 Hz sensors, 4 Hz power and RR
/// intervals, two pauses, two laps, a marker, an NTP wall-clock jump mid-ride, and a long-press
/// end (stop + save). Values mix integers, tenths and full doubles like real decoders.
enum Script {
    static func inputs(seconds rideSeconds: Int = 150, seed: UInt64 = 7) -> [AppInput] {
        var rng = SeededRandom(seed: seed)
        var out: [AppInput] = []
        for role in SensorRole.allCases { out.append(.sensor(SensorStatus(role, .connected), at: ms(0))) }
        out.append(.wallClock(WallClockTime(unixMs: 1_000_000, trusted: false), at: ms(0)))
        out.append(.button(ButtonEvent(.startPause, .down, at: ms(0))))
        out.append(.button(ButtonEvent(.startPause, .up, at: ms(100))))
        var distanceM = 0.0
        var nextRR: Int64 = 3_000
        let endMs = Int64(3 + rideSeconds) * 1000
        let pauseA = Int64(3 + rideSeconds / 3) * 1000, resumeA = pauseA + 8_000
        let lapA = Int64(3 + rideSeconds / 2) * 1000 + 250
        let ntp = lapA + 5_000
        let markerAt = ntp + 2_500
        let lapB = Int64(3 + rideSeconds * 3 / 4) * 1000 + 500
        let pauseB = endMs - 6_000
        var t: Int64 = 250
        while t <= endMs + 2_000 {
            let paused = (t >= pauseA && t < resumeA) || t >= pauseB
            if !paused {
                let powerW = Double(150 + Int(rng.next() % 120))
                out.append(.sample(Sample(.power, powerW, at: ms(t))))
                if t % 1000 == 0 {
                    out.append(.sample(Sample(.heartRate, Double(110 + Int(rng.next() % 50)), at: ms(t))))
                    out.append(.sample(Sample(.cadence, Double(800 + Int(rng.next() % 200)) / 10, at: ms(t))))
                    let speed = 6.0 + Double(rng.next() % 1000) / 333.0
                    distanceM += speed
                    out.append(.sample(Sample(.speed, speed, at: ms(t))))
                    out.append(.sample(Sample(.distance, (distanceM * 1000).rounded() / 1000, at: ms(t), origin: .generated)))
                }
                while nextRR <= t {
                    out.append(.sample(Sample(.rrInterval, Double(700 + Int(rng.next() % 300)) / 1024, at: ms(nextRR))))
                    nextRR += 650 + Int64(rng.next() % 300)
                }
            }
            if t % 500 == 0 { out.append(.tick(ms(t))) }
            if t == pauseA || t == resumeA || t == pauseB {
                out.append(.button(ButtonEvent(.startPause, .down, at: ms(t))))
                out.append(.button(ButtonEvent(.startPause, .up, at: ms(t + 50))))
            }
            if t == lapA || t == lapB {
                out.append(.button(ButtonEvent(.lap, .down, at: ms(t))))
                out.append(.button(ButtonEvent(.lap, .up, at: ms(t + 50))))
            }
            if t == ntp { out.append(.wallClock(WallClockTime(unixMs: 1_790_000_000_000, trusted: true), at: ms(t))) }
            if t == markerAt { out.append(.command(.marker(.water, value: 250), at: ms(t))) }
            if t == endMs {
                // Long press while paused: end and save.
                out.append(.button(ButtonEvent(.startPause, .down, at: ms(t))))
            }
            if t == endMs + 1_750 { out.append(.button(ButtonEvent(.startPause, .up, at: ms(t)))) }
            t += 250
        }
        return out
    }
}

/// The app core and the flash journal wired like the runtime wires them.
final class Rig {
    var core: AppCore
    let flash: SimulatedFlash
    let journal: FlashJournal
    /// Every ride record appended, in order.
    var appended: [RideRecord] = []
    /// The instant of each appended record's input.
    var appendedAt: [MonotonicInstant] = []
    var now = MonotonicInstant.zero
    var report: RecoveryReport
    /// The core as it was when everything appended so far was durable, and how many records.
    var durableCore: AppCore?
    var durableCount = 0
    /// The input instant at which `durableCore` was taken.
    var durableNow = MonotonicInstant.zero

    init(flash: SimulatedFlash, seed: UInt64 = 42, deviceNow: MonotonicInstant = .zero, wallNow: WallClockTime? = nil,
         boot: BootIdentity? = nil, policy: CommitPolicy = CommitPolicy(checkpointIntervalMs: 30_000)) {
        self.flash = flash
        let opened = FlashJournal.open(storage: flash, randomSeed: seed, deviceNow: deviceNow, wallNow: wallNow, boot: boot, policy: policy)
        core = opened.core
        journal = opened.journal
        report = opened.report
        now = deviceNow
        drain()
    }

    func drain() {
        while let e = core.drainEffect() {
            if case .journal(let r) = e { appended.append(r); appendedAt.append(now) }
            _ = journal.apply(e, at: now)
        }
    }

    func feed(_ input: AppInput) {
        now = input.instant
        core.handle(input)
        drain()
        journal.tick(at: now)
        if Int(journal.counters.recordsDurable) == appended.count {
            durableCore = core
            durableCount = appended.count
            durableNow = now
        }
    }
}

/// Whether `prefix` equals the first elements of `whole`.
func isPrefix(_ prefix: [RideRecord], of whole: [RideRecord]) -> Bool {
    prefix.count <= whole.count && zip(prefix, whole).allSatisfy { $0 == $1 }
}

func describe(_ r: RideRecord) -> String {
    switch r {
    case .header(let h): "header \(h.rideID)"
    case .event(let e): "event \(e)"
    case .sample(let s): "sample \(s.quantity)=\(s.value)@\(s.instant.milliseconds)"
    case .series(let s): "series \(s.quantity)=\(s.value)@\(s.instant.milliseconds)"
    case .wallClock(let a): "wall \(a.wall)"
    case .finished(let saved, let at): "finished \(saved)@\(at.milliseconds)"
    case .metadata(let k, let v): "meta \(k)=\(v)"
    case .elapsed(let at): "elapsed@\(at.milliseconds)"
    case .timeline(let t): "timeline \(t.boot)+\(t.offsetMs)"
    }
}
