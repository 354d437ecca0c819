// journal-bench: measures the flash journal (docs/journal.md). Run in release:
//     swift run -c release journal-bench [--quick] [--dir PATH]
// Prints bytes and syncs per ride-hour, the worst loss window over random power cuts, and the
// time to recover a 10-hour ride's journal (simulated flash and a real directory).
import AppCore
import BoardIO
import Control
import Device
import DeviceAdapters
import Glibc
import Journal
import RideModel

func nowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

extension SplitMix64 {
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// How sensor values look. `decoded`: speed, cadence and distance computed from wheel and crank
/// revolution counts and 1/1024 s event times, as a BLE CSC decoder does (full doubles);
/// `resolution`: every value at its sensor's resolution (integer W/bpm/rpm, speed in mm/s,
/// distance in cm).
enum Profile: String { case decoded, resolution }

/// Feeds a ride of `seconds` (HR, 4 Hz power, cadence, speed, distance, RR) through the app core
/// and the journal. `stop` returns true to end early (a power cut).
final class RideDriver {
    var core: AppCore
    let journal: FlashJournal
    var appended: [RideRecord] = []
    var keepRecords: Bool
    var now = MonotonicInstant.zero
    var rng = SplitMix64(seed: 17)

    init(journal: FlashJournal, core: AppCore, keepRecords: Bool) {
        self.journal = journal
        self.core = core
        self.keepRecords = keepRecords
    }

    func feed(_ input: AppInput) {
        now = input.instant
        core.handle(input)
        while let e = core.drainEffect() {
            if keepRecords, case .journal(let r) = e { appended.append(r) }
            _ = journal.apply(e, at: now)
        }
        journal.tick(at: now)
    }

    /// Returns the instant at which `stop` said to stop, if it did.
    func ride(seconds: Int, profile: Profile, finish: Bool, stop: () -> Bool = { false }) -> MonotonicInstant? {
        for role in SensorRole.allCases { feed(.sensor(SensorStatus(role, .connected), at: .zero)) }
        feed(.wallClock(WallClockTime(unixMs: 1_790_000_000_000, trusted: true), at: .zero))
        feed(.command(.start, at: .zero))
        let circumferenceM = 2.105
        var wheelRevs = 0.0, crankRevs = 0.0, rrAt: Int64 = 3_000
        var t: Int64 = 250
        let end = Int64(3 + seconds) * 1000
        var powerW = 200.0
        while t <= end {
            powerW = max(0, min(600, powerW + (rng.unit() - 0.5) * 30)).rounded()
            feed(.sample(Sample(.power, powerW, at: MonotonicInstant(milliseconds: t))))
            if stop() { return now }
            if t % 1000 == 0 {
                let at = MonotonicInstant(milliseconds: t)
                let speed = 7 + powerW / 80 + rng.unit()
                let cadence = 80 + rng.unit() * 15
                wheelRevs += speed / circumferenceM
                crankRevs += cadence / 60
                switch profile {
                case .decoded:
                    // Revolutions are counted whole; event times are in 1/1024 s.
                    let ticks = (1024 * (1 + (rng.unit() - 0.5) * 0.1)).rounded()
                    feed(.sample(Sample(.speed, circumferenceM * wheelRevs.rounded(.down).truncatingRemainder(dividingBy: 3) * 1024 / ticks + speed, at: at)))
                    feed(.sample(Sample(.cadence, 60 * 1024 / (ticks * 60 / cadence), at: at)))
                    feed(.sample(Sample(.distance, wheelRevs.rounded(.down) * circumferenceM, at: at, origin: .generated)))
                case .resolution:
                    feed(.sample(Sample(.speed, (speed * 1000).rounded() / 1000, at: at)))
                    feed(.sample(Sample(.cadence, cadence.rounded(), at: at)))
                    feed(.sample(Sample(.distance, (wheelRevs.rounded(.down) * circumferenceM * 100).rounded() / 100, at: at, origin: .generated)))
                }
                feed(.sample(Sample(.heartRate, (130 + powerW / 20).rounded(), at: at)))
                while rrAt <= t {
                    let rrTicks = (1024 * 60 / (130 + powerW / 20) + (rng.unit() - 0.5) * 40).rounded()
                    feed(.sample(Sample(.rrInterval, rrTicks / 1024, at: MonotonicInstant(milliseconds: rrAt))))
                    rrAt += Int64(rrTicks * 1000 / 1024)
                }
                if stop() { return now }
            }
            if t % 500 == 0 { feed(.tick(MonotonicInstant(milliseconds: t))) }
            if stop() { return now }
            t += 250
        }
        if finish { feed(.command(.end, at: MonotonicInstant(milliseconds: end + 100))) }
        return nil
    }
}

/// The boot the bench's rides are journaled in (a board's comes from the kernel): each ride
/// journals its timeline record (type 10) as on the board.
let benchBoot = BootIdentity(high: 0x6F1C_2A3B_9D4E_4ABC, low: 0x8123_4567_89AB_CDEF)

func fresh(_ storage: SegmentStorage, seed: UInt64 = 1) -> RideDriver {
    let opened = FlashJournal.open(storage: storage, randomSeed: seed, deviceNow: .zero, boot: benchBoot)
    return RideDriver(journal: opened.journal, core: opened.core, keepRecords: false)
}

func kb(_ bytes: Int) -> String { JSONWriter.format(Double(bytes) / 1000, decimals: 1) + " KB" }

let args = CommandLine.arguments
if args.contains("--version") {
    print(ProjectVersion.text("journal-bench"))
    exit(0)
}
let quick = args.contains("--quick")
var dirArg: String?
if let i = args.firstIndex(of: "--dir"), i + 1 < args.count { dirArg = args[i + 1] }

// `--write DIR`: leave a short ride's journal (5 minutes, a lap, not ended) in DIR and stop;
// `--write-quiet DIR`: a ride of 30 s with no sensor at all (its seconds are `elapsed` records).
// The oracle test decodes both independently.
if let i = args.firstIndex(of: "--write-quiet"), i + 1 < args.count {
    let dir = try! SegmentDirectory(path: args[i + 1], segmentBytes: 8 * 1024, createIfMissing: true)
    let d = fresh(FileSystemSegmentStorage(dir))
    d.feed(.command(.start, at: .zero))
    for s in 1...34 { d.feed(.tick(MonotonicInstant(milliseconds: Int64(s) * 1000 + 5))) }
    d.journal.syncNow(at: d.now)
    print("wrote \(d.journal.counters.recordsDurable) records to \(args[i + 1])")
    exit(0)
}
if let i = args.firstIndex(of: "--write"), i + 1 < args.count {
    let dir = try! SegmentDirectory(path: args[i + 1], segmentBytes: 8 * 1024, createIfMissing: true)
    let d = fresh(FileSystemSegmentStorage(dir))
    var laps = 0
    _ = d.ride(seconds: 300, profile: .decoded, finish: false, stop: {
        if laps == 0 && d.now.milliseconds >= 60_000 {
            laps = 1
            d.feed(.command(.lap, at: d.now))
        }
        return false
    })
    d.journal.syncNow(at: d.now)
    print("wrote \(d.journal.counters.recordsDurable) records to \(args[i + 1])")
    exit(0)
}

print("journal-bench (format v\(JournalFormat.version), segments \(JournalFormat.defaultSegmentBytes / 1024) KiB)")

// 1. Bytes, writes and syncs per ride-hour.
for profile in [Profile.decoded, .resolution] {
    let flash = SimulatedFlash()
    let d = fresh(flash)
    _ = d.ride(seconds: 3600, profile: profile, finish: false)
    let c = d.journal.counters
    print("1 h ride (\(profile.rawValue) values; HR, 4 Hz power, cadence, speed, distance, RR): "
        + "\(kb(flash.bytesWritten)) written, \(flash.syncCount) syncs, \(flash.writeCount) writes, "
        + "\(c.recordsAppended) records in \(c.framesWritten) frames, \(c.checkpoints) checkpoints, \(c.segmentsCreated) segments")
}

// 2. Worst loss window over random power cuts during a 10-minute ride.
do {
    var rng = SplitMix64(seed: 99)
    var worstMs: Int64 = 0
    var worstLostSamples = 0
    let cuts = quick ? 30 : 200
    let probe = SimulatedFlash(segmentBytes: 64 * 1024)
    _ = fresh(probe).ride(seconds: 600, profile: .decoded, finish: false)
    let totalWrites = probe.writeCount
    for k in 0..<cuts {
        let flash = SimulatedFlash(segmentBytes: 64 * 1024)
        flash.cutAtWrite = 1 + Int(rng.next() % UInt64(totalWrites))
        let modes: [SimulatedFlash.CutMode] = [.dropWrite, .tearWrite(keepBytes: 1 + Int(rng.next() % 50)), .loseUnsynced,
                                               .loseUnsyncedAndTear(keepBytes: 1 + Int(rng.next() % 50))]
        flash.cutMode = modes[k % 4]
        let d = fresh(flash)
        d.keepRecords = true
        _ = d.ride(seconds: 600, profile: .decoded, finish: false, stop: { flash.powerIsOff })
        flash.powerCycle()
        let recovered = JournalScan.scan(flash, repair: false).rides().rides.first?.records ?? []
        let lost = d.appended[min(recovered.count, d.appended.count)...].compactMap { r -> Int64? in
            if case .sample(let s) = r { s.instant.milliseconds } else { nil }
        }
        if let a = lost.min(), let b = lost.max() {
            worstMs = max(worstMs, b - a + 1000)
            worstLostSamples = max(worstLostSamples, lost.count)
        }
    }
    print("loss window over \(cuts) random power cuts (drop/tear/lose-unsynced): worst \(worstMs) ms of 1 Hz samples (\(worstLostSamples) sample values)")
}

// 3. Recovery time for a 10-hour ride's journal.
do {
    let hours = quick ? 1 : 10
    let flash = SimulatedFlash()
    let d = fresh(flash)
    let t0 = nowNs()
    _ = d.ride(seconds: hours * 3600, profile: .decoded, finish: false)
    let buildS = Double(nowNs() - t0) / 1e9
    let segments = try! flash.list()
    var bytes = 0
    for s in segments { bytes += flash.contents(s)!.lastIndex(where: { $0 != 0 }) ?? 0 }
    var timesMs: [Double] = []
    var replayed = 0
    for _ in 0..<5 {
        let copy = flash.snapshot()
        let start = nowNs()
        let opened = FlashJournal.open(storage: copy, randomSeed: 2, deviceNow: .zero)
        timesMs.append(Double(nowNs() - start) / 1e6)
        replayed = opened.report.recordsReplayed
    }
    timesMs.sort()
    if args.contains("--profile") {
        let copy = flash.snapshot()
        var t = nowNs()
        let scan = JournalScan.scan(copy, repair: false)
        let tScan = nowNs() - t; t = nowNs()
        let rides = scan.rides(withRecords: false).rides
        let tRides = nowNs() - t; t = nowNs()
        var core = AppCore(randomSeed: 1)
        scan.forEachRecord(in: rides.last!.frames) { core.replay($0) }
        let tReplay = nowNs() - t
        print("profile: scan \(tScan / 1_000_000) ms, rides \(tRides / 1_000_000) ms, replay \(tReplay / 1_000_000) ms")
    }
    print("\(hours) h ride journal: \(segments.count) segments, \(kb(bytes)) of records, \(replayed) records replayed; "
        + "recovery (scan + verify + replay + resume) on simulated flash: median \(JSONWriter.format(timesMs[2], decimals: 1)) ms, "
        + "min \(JSONWriter.format(timesMs[0], decimals: 1)) ms (journal built in \(JSONWriter.format(buildS, decimals: 1)) s)")

    // The same journal in a real directory (files read through the page cache).
    var template = Array("/tmp/journal-bench-XXXXXX".utf8CString)
    let tmp = dirArg ?? String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
    let dir = try! SegmentDirectory(path: tmp, segmentBytes: flash.segmentBytes, createIfMissing: true)
    let storage = FileSystemSegmentStorage(dir)
    for s in segments {
        try! storage.create(s)
        try! flash.contents(s)!.withUnsafeBytes { try storage.write(s, at: 0, $0) }
        try! storage.sync(s)
    }
    var dirTimes: [Double] = []
    for _ in 0..<3 {
        let start = nowNs()
        _ = FlashJournal.open(storage: FileSystemSegmentStorage(try! SegmentDirectory(path: tmp, segmentBytes: flash.segmentBytes)),
                              randomSeed: 3, deviceNow: .zero)
        dirTimes.append(Double(nowNs() - start) / 1e6)
        // Opening appends the gap event; it is part of the ride from then on, like on the board.
    }
    dirTimes.sort()
    print("same journal from a directory (\(tmp)): recovery median \(JSONWriter.format(dirTimes[1], decimals: 1)) ms")
    if dirArg == nil {
        for n in (try? dir.list()) ?? [] { unlink(tmp + "/" + n) }
        rmdir(tmp)
    }
}

// 4. How long a commit blocks the loop on a real directory (write + fdatasync).
do {
    var template = Array("/var/tmp/journal-sync-XXXXXX".utf8CString)
    let tmp = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
    let dir = try! SegmentDirectory(path: tmp, segmentBytes: JournalFormat.defaultSegmentBytes)
    let d = fresh(FileSystemSegmentStorage(dir))
    _ = d.ride(seconds: quick ? 60 : 300, profile: Profile.decoded, finish: true)
    print("real directory \(tmp): \(dir.syncCount) fdatasyncs, slowest write \(JSONWriter.format(Double(dir.slowestWriteNs) / 1e6, decimals: 3)) ms, "
        + "slowest fdatasync \(JSONWriter.format(Double(dir.slowestSyncNs) / 1e6, decimals: 3)) ms")
    for n in (try? dir.list()) ?? [] { unlink(tmp + "/" + n) }
    rmdir(tmp)
}

