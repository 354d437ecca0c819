// bikebench: holds the device to its budget (docs/performance.md). Run in release:
//     swift run -c release bikebench [--json] [--hours N] [--out DIR] [--quick]
//     swift run -c release bikebench --guard [--inject-allocation]      (CI: allocations per frame)
//     bikebench --callgrind-frames N                                    (scripts/bench/callgrind.sh)
// Heap allocations are counted by CMallocCounter (malloc & co. replaced in this executable only).
import AppCore
import Device
import Display
import Glibc
import Journal
import RideFiles
import RideModel
import Screens
import Sensors
import Simulation

let args = Array(CommandLine.arguments.dropFirst())
func value(_ flag: String) -> String? {
    guard let i = args.firstIndex(of: flag), i + 1 < args.count else { return nil }
    return args[i + 1]
}

if args.contains("--version") {
    print(ProjectVersion.text("bikebench"))
    exit(0)
}
let known: Set<String> = ["--json", "--guard", "--gps", "--course", "--navigation", "--large-panel", "--inject-allocation", "--quick", "--hours", "--out", "--callgrind-frames", "--trace-allocations", "--help", "-h"]
for (i, a) in args.enumerated() where a.hasPrefix("-") && !known.contains(a) {
    if i > 0, ["--hours", "--out", "--callgrind-frames", "--trace-allocations"].contains(args[i - 1]) { continue }
    printError("bikebench: unknown option \(a); run `bikebench --help` for the options")
    exit(2)
}
if args.contains("--help") || args.contains("-h") {
    print("""
    usage: bikebench [--json] [--quick] [--hours N] [--out DIR]
           bikebench --guard [--gps [--course]] [--large-panel] [--inject-allocation] [--trace-allocations N]
           bikebench --navigation [--json] [--quick]
           bikebench --callgrind-frames N
    Measures the sensor-frame path, rendering, journal, FIT encoding and a headless ride (docs/performance.md).
    --guard fails (exit 1) if a sensor frame allocates in steady state; --inject-allocation makes it allocate;
    --gps adds the GPS (gpsd report lines, 1 Hz) and the barometer (1 Hz) to the frames;
    --course (with --gps) follows a course along the GPS's route: its fixes must not add an allocation to the ticks;
    --navigation measures only course import (300 km, 50 000 points) and the follower's cost per fix;
    --large-panel draws them on the 400x240 memory LCD (its driver on a counting SPI link) instead of the 128x64 OLED;
    --trace-allocations N prints the stacks of the next N allocations in the measured stretch (frames and ticks).
    """)
    exit(0)
}

guard Allocations.isCounting else {
    printError("bikebench: the malloc counter is not interposed (CMallocCounter not linked first?): allocation figures would read 0; rebuild bikebench")
    exit(3)
}

// MARK: CI guard

if args.contains("--guard") {
    let withCourse = args.contains("--course") && args.contains("--gps")
    let r = runFramePath(warmUpMs: 120_000, measureMs: 300_000, injectAllocation: args.contains("--inject-allocation"),
                         traceAllocations: value("--trace-allocations").flatMap { Int($0) } ?? 0, positioning: args.contains("--gps"),
                         largePanel: args.contains("--large-panel"),
                         course: withCourse ? demoLoopCourse() : nil)
    if withCourse {
        // The same ride without the course: following it must add no allocation to the ticks
        // (the follower runs in the 1 Hz record) but for the alerts it raised (a cue's stages,
        // an alarm: a few per kilometre at most), whose log line is written when they happen.
        let base = runFramePath(warmUpMs: 120_000, measureMs: 300_000, positioning: true)
        print("bikebench guard: course: \(r.courseFixes) fixes followed (\(r.courseState)), \(r.alerts) alerts; "
            + "tick allocations \(r.tickAllocations) with the course, \(base.tickAllocations) without")
        guard r.courseFixes > 300, r.courseState == "on_course" else {
            print("bikebench guard: FAIL: the course was not followed (\(r.courseFixes) fixes, \(r.courseState))")
            exit(1)
        }
        // An alert's words and its log line: 2 allocations (measured: a course without cues adds 0).
        guard r.tickAllocations <= base.tickAllocations + 2 * UInt64(r.alerts) else {
            print("bikebench guard: FAIL: following the course allocates in the ticks (\(r.tickAllocations) against \(base.tickAllocations)); "
                + "find it with `bikebench --guard --gps --course --trace-allocations 5`")
            exit(1)
        }
    }
    let perFrame = Double(r.frameAllocations) / Double(max(1, r.frames))
    print("bikebench guard: \(args.contains("--large-panel") ? "400x240 memory LCD: " : "")\(r.frames) sensor frames in steady state, \(r.frameAllocations) heap allocations "
        + "(\(r.framesThatAllocated) frames allocated; \(Report.format(perFrame, 3)) per frame); "
        + "\(r.ticks) ticks, \(r.tickAllocations) allocations in ticks (reported, not guarded)")
    if args.contains("--gps") {
        print("bikebench guard: GPS: \(r.gpsLines) gpsd lines (\(r.gpsFixes) fixes), \(r.gpsAllocations) heap allocations; "
            + "barometer: \(r.barometerReadings) readings, \(r.barometerAllocations) heap allocations")
        guard r.gpsFixes > 100, r.barometerReadings > 100 else {
            print("bikebench guard: FAIL: the GPS path did not run (\(r.gpsFixes) fixes, \(r.barometerReadings) barometer readings)")
            exit(1)
        }
    }
    guard r.frames > 1000, r.samplesEmitted > UInt64(r.frames / 2) else {
        print("bikebench guard: FAIL: the frame path did not run (\(r.frames) frames, \(r.samplesEmitted) samples)")
        exit(1)
    }
    if r.frameAllocations > 0 {
        print("bikebench guard: FAIL: sensor frames allocate in steady state (first at measured frame \(r.firstAllocatingFrame ?? -1)); "
            + "find it with `bikebench --guard --trace-allocations 5`, see docs/performance.md")
        exit(1)
    }
    print("bikebench guard: ok (0 allocations per sensor frame)")
    exit(0)
}

// MARK: navigation

func reportNavigation(_ n: NavigationBenchResult, into report: Report) {
    let importMs = n.importMs.sorted()[n.importMs.count / 2]
    report.add("nav_import_300km_ms", "import a 300 km GPX course of 50 000 points (\(n.gpxBytes / 1024) KB: parse, simplify, cues, climbs), median of \(n.importMs.count)",
               importMs, "ms", decimals: 0, note: "\(n.pointsKept) points kept, \(n.cues) cues from the bends, \(n.climbs) climbs")
    report.add("nav_import_300km_allocated_mb", "heap bytes requested by that import (\(n.importAllocations) allocations)",
               Double(n.importAllocatedBytes) / 1_048_576, "MB", decimals: 1)
    report.add("nav_import_300km_peak_rss_growth_mb", "peak resident memory growth of that import", Double(n.peakRSSGrowthKB) / 1024, "MB", decimals: 1)
    report.add("nav_course_file_bytes", "its compact course file", Double(n.fileBytes), "B")
    report.add("nav_course_decode_ms", "loading it (read from memory, CRC-32, every check), median of 5", n.decodeMs.sorted()[2], "ms", decimals: 2)
    let p = Percentiles(n.fixNs)
    report.add("nav_fix_p50_ns", "the follower per fix on it (9 m/s, ±4 m noise, \(n.fixNs.count) fixes), p50", Double(p.p50), "ns")
    report.add("nav_fix_p99_ns", "the follower per fix, p99", Double(p.p99), "ns")
    report.add("nav_fix_max_ns", "the follower per fix, max", Double(p.max), "ns")
    report.add("nav_fix_allocations_per_fix", "heap allocations per fix (steady state)", Double(n.fixAllocations) / Double(max(1, n.fixNs.count)), "allocations",
               decimals: 3, target: "0", met: n.fixAllocations == 0)
    let s = Percentiles(n.searchNs)
    report.add("nav_search_p50_ns", "a whole-course search (before the first lock, off course: 1 a second at most), p50", Double(s.p50), "ns")
    report.add("nav_alarms", "alarms riding the 300 km course as drawn", Double(n.alarms), "alarms", target: "0", met: n.alarms == 0,
               note: "distance to go at the end \(Report.format(n.distanceToGoM, 1)) m of \(Report.format(n.lengthM / 1000, 1)) km")
}

if args.contains("--navigation") {
    let report = Report()
    reportNavigation(runNavigationBench(quick: args.contains("--quick")), into: report)
    if args.contains("--json") { report.printJSON(machine: machineDescription(), date: utcDate()) } else {
        print("bikebench navigation (\(machineDescription()), \(utcDate())):")
        report.printText()
    }
    exit(0)
}

// MARK: callgrind

if let n = value("--callgrind-frames").flatMap({ Int($0) }) {
    // Setup and 60 s of warm-up, then n frames (~13 per second) with nothing else around them:
    // the difference of two runs' totals divided by the difference of frames is the per-frame cost.
    let measureMs = Int64(n) * 1000 / 13 + 1
    // The frames' bytes are encoded for 30 min of ride whatever n is (up to ~23,000 frames), so
    // the encoding cancels out of the difference too.
    let r = runFramePath(warmUpMs: 60_000, measureMs: measureMs, timing: false, streamMs: 1_860_000)
    print("frames \(r.frames)")
    exit(0)
}

// MARK: The full run

let json = args.contains("--json")
let quick = args.contains("--quick")
let hours = value("--hours").flatMap { Int($0) } ?? (quick ? 1 : 10)
let outDir: String = {
    if let o = value("--out") { mkdir(o, 0o755); return o }
    var template = Array("/tmp/bikebench-XXXXXX".utf8CString)
    return String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
}()
let report = Report()
func progress(_ s: String) { if !json { print(s) } else { printError(s) } }

progress("bikebench on \(machineDescription()), \(utcDate())")

// 1. Sensor frame end to end.
do {
    let measureMs: Int64 = quick ? 600_000 : 3_600_000
    progress("1. sensor frame end to end (10 min warm-up, then \(measureMs / 60_000) min of ride measured)...")
    let r = runFramePath(warmUpMs: 600_000, measureMs: measureMs)
    let p = Percentiles(r.frameNs)
    let t = Percentiles(r.tickNs)
    let hoursMeasured = Double(r.measuredMs) / 3_600_000
    report.add("frame_p50_ns", "sensor frame end to end, p50", Double(p.p50), "ns")
    report.add("frame_p99_ns", "sensor frame end to end, p99", Double(p.p99), "ns")
    report.add("frame_max_ns", "sensor frame end to end, max", Double(p.max), "ns")
    report.add("frame_allocations_per_frame", "heap allocations per sensor frame (steady state, \(r.frames) frames)",
               Double(r.frameAllocations) / Double(max(1, r.frames)), "allocations", decimals: 3,
               target: "0", met: r.frameAllocations == 0)
    report.add("tick_p50_ns", "1 Hz tick (record, journal, screen), p50", Double(t.p50), "ns")
    report.add("tick_p99_ns", "1 Hz tick (record, journal, screen), p99", Double(t.p99), "ns")
    report.add("tick_allocations_per_tick", "heap allocations per 1 Hz tick (\(r.ticks) ticks)",
               Double(r.tickAllocations) / Double(max(1, r.ticks)), "allocations", decimals: 2)
    report.add("frames_per_second", "sensor frames per ride-second", Double(r.frames) / (Double(r.measuredMs) / 1000), "frames/s", decimals: 1)
    report.add("cpu_share_frames_percent", "CPU share of one core for frames + ticks at this rate (this machine)",
               (p.mean * Double(r.frames) + t.mean * Double(r.ticks)) / (Double(r.measuredMs) * 1e6) * 100, "%", decimals: 4)
    report.add("i2c_bytes_per_s_ride", "I²C bytes/s on the wire, running page 1, 4 Hz sensors", Double(r.wireBytes) / (Double(r.measuredMs) / 1000), "B/s", decimals: 0)
    report.add("journal_bytes_per_hour", "journal bytes per ride-hour (HR+RR, 4 Hz power, speed, cadence, distance; from frames)",
               Double(r.journalBytes) / hoursMeasured, "bytes", target: "≤ 200000", met: Double(r.journalBytes) / hoursMeasured <= 200_000)
    report.add("journal_syncs_per_hour", "journal syncs per ride-hour", Double(r.journalSyncs) / hoursMeasured, "syncs",
               target: "≤ 3600", met: Double(r.journalSyncs) / hoursMeasured <= 3600)
}

/// One more second of a ride on the screen: the clocks, speed, distance, heart rate, power, cadence.
func rideSecond(_ m: inout ScreenModel, _ next: () -> Double) {
    m.timerMs += 1000
    m.elapsedMs += 1000
    m.lapTimerMs += 1000
    m[.speed] = (28 + 6 * next()) / 3.6
    m[.distance] = (m[.distance] ?? 0) + (m[.speed] ?? 0)
    m[.heartRate] = (140 + 15 * next()).rounded()
    m[.power] = (200 + 80 * next()).rounded()
    m[.cadence] = (85 + 10 * next()).rounded()
}

// 2. Rendering and diffing a running page.
do {
    progress("2. rendering and diffing a running page...")
    for page in 0..<3 {
        var pipeline = DisplayPipeline()
        var bus = CountingBus()
        do { try pipeline.start(bus: &bus) } catch { preconditionFailure("\(error)") }
        var m = ScreenCatalogue.riding()
        m.mode = .running(page: page)
        var ns: [Int64] = []
        ns.reserveCapacity(3600)
        let seconds = quick ? 600 : 3600
        let wire0 = pipeline.driver.statistics.wireBytes
        var rng: UInt64 = 12345
        func next() -> Double { rng = rng &* 6364136223846793005 &+ 1442695040888963407; return Double(rng >> 11) / Double(1 << 53) }
        let a0 = Allocations.count
        for s in 0..<seconds {
            rideSecond(&m, next)
            _ = s
            let t0 = Clock.ns()
            pipeline.show(m)
            let t1 = Clock.ns()
            ns.append(t1 - t0)
            do { try pipeline.flushAll(bus: &bus) } catch { preconditionFailure("\(error)") }
        }
        let allocs = Allocations.count - a0
        let p = Percentiles(ns)
        let bytesPerS = Double(pipeline.driver.statistics.wireBytes - wire0) / Double(seconds)
        report.add("render_page\(page + 1)_p50_ns", "render + diff running page \(page + 1) (1 Hz values), p50", Double(p.p50), "ns")
        report.add("render_page\(page + 1)_p99_ns", "render + diff running page \(page + 1), p99", Double(p.p99), "ns")
        report.add("render_page\(page + 1)_allocations", "heap allocations rendering page \(page + 1), per second", Double(allocs) / Double(seconds), "allocations", decimals: 3)
        report.add("i2c_page\(page + 1)_bytes_per_s", "I²C bytes/s, running page \(page + 1) at 1 Hz", bytesPerS, "B/s",
                   note: "bus time \(Report.format(bytesPerS * 9 / 400, 2)) ms per second at 400 kHz")
        if page == 0 {
            let before = pipeline.driver.statistics
            pipeline.invalidate()
            do { try pipeline.flushAll(bus: &bus) } catch { preconditionFailure("\(error)") }
            let full = pipeline.driver.statistics.wireBytes - before.wireBytes
            report.add("i2c_full_frame_bytes", "I²C bytes for a full frame (8 pages)", Double(full), "B",
                       note: "\(Report.format(Double(full) * 9 / 400, 1)) ms at 400 kHz; 1 Hz full frames = \(full) B/s")
        }
    }
}

// 2b. The same on the 400×240 memory LCD: render + diff, its SPI bytes per update and their
//     time at the panel's clock, a full frame.
do {
    progress("2b. rendering and diffing a running page on the 400x240 memory LCD...")
    for page in 0..<3 {
        let lines = SharpMemoryDriver.linesPerStep(width: 400, clockHz: 1_000_000)
        var pipeline = PanelPipeline(driver: SharpMemoryDriver(model: .ls027b7dh01, linesPerStep: lines))
        var link = SPIDisplayLink(port: CountingSPI())
        do { try pipeline.start(bus: &link) } catch { preconditionFailure("\(error)") }
        var m = ScreenCatalogue.riding()
        m.mode = .running(page: page)
        var ns: [Int64] = []
        let seconds = quick ? 600 : 3600
        ns.reserveCapacity(seconds)
        var rng: UInt64 = 12345
        func next() -> Double { rng = rng &* 6364136223846793005 &+ 1442695040888963407; return Double(rng >> 11) / Double(1 << 53) }
        let bytes0 = link.port.bytes, lines0 = pipeline.driver.statistics.pageWrites
        var longestUpdate = 0
        let a0 = Allocations.count
        for _ in 0..<seconds {
            rideSecond(&m, next)
            let t0 = Clock.ns()
            pipeline.show(m)
            let t1 = Clock.ns()
            ns.append(t1 - t0)
            let before = link.port.bytes
            do { try pipeline.flushAll(bus: &link) } catch { preconditionFailure("\(error)") }
            longestUpdate = max(longestUpdate, link.port.bytes - before)
        }
        let allocs = Allocations.count - a0
        let p = Percentiles(ns)
        let perUpdate = Double(link.port.bytes - bytes0) / Double(seconds)
        let linesPerUpdate = Double(pipeline.driver.statistics.pageWrites - lines0) / Double(seconds)
        report.add("lcd_render_page\(page + 1)_p50_ns", "400x240: render + diff running page \(page + 1) (1 Hz values), p50", Double(p.p50), "ns")
        report.add("lcd_render_page\(page + 1)_p99_ns", "400x240: render + diff running page \(page + 1), p99", Double(p.p99), "ns")
        report.add("lcd_render_page\(page + 1)_allocations", "400x240: heap allocations rendering page \(page + 1), per second", Double(allocs) / Double(seconds), "allocations", decimals: 3)
        report.add("spi_page\(page + 1)_bytes_per_update", "400x240: SPI bytes per update, running page \(page + 1) at 1 Hz", perUpdate, "B",
                   note: "\(Report.format(linesPerUpdate, 1)) lines; \(Report.format(perUpdate * 8 / 1_000, 2)) ms at 1 MHz, \(Report.format(perUpdate * 8 / 2_000, 2)) ms at 2 MHz; largest update \(longestUpdate) B")
        if page == 0 {
            let before = link.port.bytes, t0 = link.port.transactions
            pipeline.invalidate()
            do { try pipeline.flushAll(bus: &link) } catch { preconditionFailure("\(error)") }
            let full = link.port.bytes - before
            report.add("spi_full_frame_bytes", "400x240: SPI bytes for a full frame (240 lines)", Double(full), "B",
                       note: "\(Report.format(Double(full) * 8 / 1_000, 1)) ms at 1 MHz in \(link.port.transactions - t0) steps of at most \(link.port.longestTransaction) B (\(Report.format(Double(link.port.longestTransaction) * 8 / 1_000, 2)) ms)")
        }
    }
}

// 3. A long synthetic ride headless, as `bikesim --headless` runs it (flash journal, emulated
//    panel), then its FIT file.
var rideRecords: [RideRecord] = []
do {
    progress("3. \(hours) h synthetic ride headless...")
    guard let scenario = try? Scenario.parse(BuiltinScenarios.long(hours: hours)) else { preconditionFailure("long scenario does not parse") }
    let scenarioPath = outDir + "/long-\(hours)h.scenario"
    _ = writeFile(scenarioPath, Array(BuiltinScenarios.long(hours: hours).utf8))
    let archive = MemoryArchive()
    let t0 = Clock.ns()
    let sim = HeadlessRun(scenario: scenario, options: .init(seed: 1), storage: SimulatedFlashStorage(), archive: archive, screen: EmulatedScreen())
    sim.run()
    let wallS = Double(Clock.ns() - t0) / 1e9
    rideRecords = archive.rides.first?.records ?? []
    report.add("headless_\(hours)h_in_process_s", "\(hours) h ride through HeadlessRun in process (no file writes)", wallS, "s", decimals: 2,
               target: hours == 10 ? "≤ 5" : nil, met: hours == 10 ? wallS <= 5 : nil, note: "\(sim.counters.inputs) inputs")
    let bikesim = executableDirectory() + "/bikesim"
    if fileExists(bikesim) {
        let t1 = Clock.ns()
        let r = shell("'\(bikesim)' --headless --scenario '\(scenarioPath)' --out '\(outDir)/bikesim' 2>&1")
        let s = Double(Clock.ns() - t1) / 1e9
        if r.status == 0 {
            report.add("bikesim_headless_\(hours)h_s", "`bikesim --headless` of the \(hours) h scenario, wall", s, "s", decimals: 2,
                       target: hours == 10 ? "≤ 5" : nil, met: hours == 10 ? s <= 5 : nil)
        } else {
            report.notes.append("bikesim --headless failed (\(r.status)): \(r.output.suffix(300))")
        }
    } else {
        report.notes.append("bikesim not built next to bikebench: `swift build -c release --product bikesim` adds the `bikesim --headless` wall time")
    }
}

// 4. FIT encoding of that ride.
do {
    progress("4. FIT encoding of the \(hours) h ride (\(rideRecords.count) records)...")
    var times: [Int64] = []
    var fit: [UInt8] = []
    for _ in 0..<5 {
        let t0 = Clock.ns()
        do { fit = try FITEncoder.encode(records: rideRecords) } catch { preconditionFailure("FIT encoding failed: \(error)") }
        times.append(Clock.ns() - t0)
    }
    let ms = Double(Percentiles(times).p50) / 1e6
    report.add("fit_encode_\(hours)h_ms", "FIT encoding of the \(hours) h ride, median of 5", ms, "ms", decimals: 1,
               target: hours == 10 ? "≤ 100" : nil, met: hours == 10 ? ms <= 100 : nil)
    report.add("fit_\(hours)h_bytes", "FIT file of the \(hours) h ride", Double(fit.count), "B")
    let fitPath = outDir + "/ride-\(hours)h.fit"
    _ = writeFile(fitPath, fit)
    // Garmin's own encoder, when the oracle venv exists (scripts/test.sh creates .venv).
    let python = getenv("BIKEBENCH_PYTHON").map { String(cString: $0) } ?? (fileExists(".venv/bin/python") ? ".venv/bin/python" : nil)
    if let python, fileExists("scripts/bench/garmin_encode_size.py") {
        let r = shell("'\(python)' scripts/bench/garmin_encode_size.py '\(fitPath)' 2>&1")
        var garmin: Double?
        for line in r.output.split(separator: "\n") where line.hasPrefix("garmin_bytes ") {
            garmin = Double(line.dropFirst("garmin_bytes ".count))
        }
        if r.status == 0, let garmin {
            report.add("fit_\(hours)h_garmin_bytes", "same messages re-encoded by garmin-fit-sdk's Encoder", garmin, "B",
                       note: "ours is \(Report.format(Double(fit.count) / garmin * 100, 1)) % of Garmin's")
        } else {
            report.notes.append("garmin_encode_size.py failed: \(r.output.suffix(400))")
        }
    } else {
        report.notes.append("no oracle venv (.venv, or BIKEBENCH_PYTHON=path): run `.venv/bin/python scripts/bench/garmin_encode_size.py \(fitPath)` after scripts/test.sh made it")
    }
}

// 5. Journal: a ride with the flash journal through the same headless runner, and the time to
//    recover its journal (scan, verify, replay, resume) just before it ends.
do {
    progress("5. \(hours) h journal and its recovery...")
    guard let scenario = try? Scenario.parse(BuiltinScenarios.long(hours: hours)) else { preconditionFailure("long scenario does not parse") }
    let storage = SimulatedFlashStorage()
    let flash = storage.flash
    let sim = HeadlessRun(scenario: scenario, options: .init(seed: 1), storage: storage, archive: NullArchive())
    var snapshot: SimulatedFlash?
    var bytesAtHour = 0, syncsAtHour = 0, bytesAtStart = 0, syncsAtStart = 0
    let cutMs = Int64(hours) * 3_600_000 - 1_000
    sim.run { ms in
        if ms >= 5_000 && bytesAtStart == 0 { bytesAtStart = flash.bytesWritten; syncsAtStart = flash.syncCount }
        if ms >= 3_605_000 && bytesAtHour == 0 { bytesAtHour = flash.bytesWritten; syncsAtHour = flash.syncCount }
        if ms >= cutMs && snapshot == nil { snapshot = flash.snapshot() }
    }
    if bytesAtHour > 0 {
        let b = bytesAtHour - bytesAtStart, s = syncsAtHour - syncsAtStart
        report.add("journal_sim_bytes_per_hour", "journal bytes in the first ride-hour of the headless ride (simulated sensors, no RR)", Double(b), "bytes",
                   target: "≤ 200000", met: b <= 200_000)
        report.add("journal_sim_syncs_per_hour", "journal syncs in that hour", Double(s), "syncs", target: "≤ 3600", met: s <= 3600)
    }
    if let snapshot {
        var times: [Int64] = []
        var replayed = 0
        for _ in 0..<5 {
            let copy = snapshot.snapshot()
            let t0 = Clock.ns()
            let o = FlashJournal.open(storage: copy, randomSeed: 2, deviceNow: .zero)
            times.append(Clock.ns() - t0)
            replayed = o.report.recordsReplayed
        }
        let ms = Double(Percentiles(times).p50) / 1e6
        report.add("journal_recovery_\(hours)h_ms", "recovery of the \(hours) h journal (scan, verify, replay \(replayed) records), median of 5", ms, "ms", decimals: 1,
                   target: hours == 10 ? "≤ 100" : nil, met: hours == 10 ? ms <= 100 : nil)
    }
    let jb = executableDirectory() + "/journal-bench"
    report.notes.append(fileExists(jb) ? "journal-bench is built: `\(jb)` gives its own figures (loss window, fdatasync times)"
                                       : "journal-bench's own figures (loss window, fdatasync times): `swift run -c release journal-bench`")
}

// 6. Navigation: a 300 km course imported, loaded and followed.
do {
    progress("6. navigation: a 300 km course of 50 000 points imported and followed...")
    reportNavigation(runNavigationBench(quick: quick), into: report)
}

if json {
    report.printJSON(machine: machineDescription(), date: utcDate())
} else {
    print("bikebench results (\(machineDescription()), \(utcDate()); files in \(outDir)):")
    report.printText()
}
