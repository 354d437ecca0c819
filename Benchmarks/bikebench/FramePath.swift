// The device's path for one sensor frame, end to end, with the board's pieces where the board
// has them and counting stand-ins where it would touch hardware:
//   bridge frame bytes -> DeviceRuntime.receive -> BridgeFrame.parse -> decoder -> DataSource
//   -> AppCore -> ScreenModel -> ScreenRenderer -> Framebuffer
//   -> DisplayDriver (changed pages only) -> a counting bus,
// with the 1 Hz ticks and the flash journal (group commit into simulated flash) in between. The
// device boots with `DeviceRuntime.boot`, the board's own start-up sequence.
import AppCore
import Navigation
import CMallocCounter
import Control
import Device
import Display
import Glibc
import Journal
import RideModel
import Screens
import Sensors
import Simulation

/// An SPI device that only counts what it is given (a memory LCD's link in measurements).
struct CountingSPI: SPIWriter {
    private(set) var transactions = 0
    private(set) var bytes = 0
    private(set) var longestTransaction = 0
    mutating func write(_ b: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        transactions += 1
        bytes += b.count
        longestTransaction = max(longestTransaction, b.count)
    }
}

/// The display end: the board's DisplayPipeline with a bus that only counts (or, with
/// `largePanel`, the 400×240 memory LCD's pipeline on a counting SPI link, 8 lines per step as
/// at 1 MHz). Every page the input dirtied is flushed (the run loop does one page per turn until
/// none is pending).
final class CountingScreen: ScreenPort {
    var pipeline = DisplayPipeline()
    var bus = CountingBus()
    var lcd: PanelPipeline<SharpMemoryDriver>?
    var link = SPIDisplayLink(port: CountingSPI())
    /// Allocate on every show: the guard's self-test (must make the guard fail).
    var allocateOnShow = false
    private var sink: [Int] = []

    init(largePanel: Bool = false) {
        do {
            if largePanel {
                lcd = PanelPipeline(driver: SharpMemoryDriver(model: .ls027b7dh01, linesPerStep: SharpMemoryDriver.linesPerStep(width: 400, clockHz: 1_000_000)))
                try lcd!.start(bus: &link)
            } else {
                try pipeline.start(bus: &bus)
            }
        } catch { preconditionFailure("a counting bus never fails: \(error)") }
    }

    func show(_ screen: ScreenModel, at now: MonotonicInstant) {
        do {
            if lcd != nil {
                lcd!.show(screen)
                while lcd!.hasPendingPages { try lcd!.flushStep(bus: &link) }
            } else {
                pipeline.show(screen)
                while pipeline.hasPendingPages { try pipeline.flushStep(bus: &bus) }
            }
        } catch { preconditionFailure("a counting bus never fails: \(error)") }
        if allocateOnShow { sink = Array(repeating: Int(now.milliseconds), count: 4) }
    }

    var wireBytes: Int { lcd.map { $0.driver.statistics.payloadBytes } ?? pipeline.driver.statistics.wireBytes }
}

final class NullArchive: RideArchivePort {
    func store(rideID: RideID, records: [RideRecord]) throws -> String { "\(records.count) records dropped" }
    func delete(rideID: RideID) throws {}
}

/// Bridge frames of a synthetic ride, encoded once up front: heart rate (BLE HRM with RR) at
/// 1 Hz, power (BLE CPS), speed and cadence (BLE CSC) at 4 Hz each, as the simulator's sensors.
struct FrameStream {
    static let heartRate = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:01")!)
    static let power = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:02")!)
    static let speed = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:03")!)
    static let cadence = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:04")!)

    static var configuration: DataSourceConfiguration {
        DataSourceConfiguration(sensors: [
            PairedSensor(heartRate, provides: QuantitySet(.heartRate, .rrInterval, .battery)),
            PairedSensor(power, provides: QuantitySet(.power)),
            PairedSensor(speed, provides: QuantitySet(.speed, .distance)),
            PairedSensor(cadence, provides: QuantitySet(.cadence)),
        ])
    }

    var bytes: [UInt8] = []
    var offsets: [Int] = [0]
    var atMs: [Int64] = []
    /// What each entry is (`InputKind`): a bridge frame, a gpsd line, a barometer reading.
    var kinds: [InputKind] = []
    var count: Int { atMs.count }

    /// One simulated sensor's schedule: heart rate at 1 Hz, the others at 4 Hz, out of step.
    struct Schedule {
        let role: SensorRole
        let periodMs: Int64
        var nextMs: Int64
    }

    init(durationMs: Int64, seed: UInt64 = 3, positioning: Bool = false) {
        var ride = SyntheticRide(seed: seed)
        var position = positioning ? PositionStream(seed: seed) : nil
        var schedules = [Schedule(role: .heartRate, periodMs: 1_000, nextMs: 130), Schedule(role: .power, periodMs: 250, nextMs: 60),
                         Schedule(role: .speed, periodMs: 250, nextMs: 170), Schedule(role: .cadence, periodMs: 250, nextMs: 210)]
        var payload: [UInt8] = []
        payload.reserveCapacity(SensorPayloads.payloadBytesMax)
        var lastSentBeatMs: Int64 = 0
        let expected = Int(durationMs / 1000 * 13 + 16)
        atMs.reserveCapacity(expected)
        offsets.reserveCapacity(expected + 1)
        bytes.reserveCapacity(expected * 32)
        while true {
            var i = 0
            for k in 1..<schedules.count where schedules[k].nextMs < schedules[i].nextMs { i = k }
            let t = schedules[i].nextMs
            if let due = position?.nextMs, due < t, due <= durationMs {
                position!.append(atMs: due, ride: &ride, into: &self)
                continue
            }
            guard t <= durationMs else { break }
            schedules[i].nextMs += schedules[i].periodMs
            ride.advance(toMs: t)
            let who: SourceIdentity
            let code: UInt16
            switch schedules[i].role {
            case .heartRate:
                SensorPayloads.bleHeartRate(ride, lastSentBeatMs: lastSentBeatMs, into: &payload)
                lastSentBeatMs = ride.lastBeatMs
                who = Self.heartRate; code = 0x2A37
            case .power:
                SensorPayloads.blePower(ride, into: &payload)
                who = Self.power; code = 0x2A63
            case .speed:
                SensorPayloads.bleSpeed(ride, into: &payload)
                who = Self.speed; code = 0x2A5B
            case .cadence:
                SensorPayloads.bleCadence(ride, into: &payload)
                who = Self.cadence; code = 0x2A5B
            case .gps, .radar:
                continue // not a bridge sensor (PositionStream); the radar has its own stream
            }
            let frame = BridgeFrame(bridgeTimeUs: UInt64(t) * 1000, .data(who, profileCode: code, Payload(payload)!))
            bytes += frame.encoded().bytes
            offsets.append(bytes.count)
            atMs.append(t)
            kinds.append(.bridge)
        }
    }
}

/// A device: the runtime (sensor inputs, app core, flash journal on simulated flash, display
/// pipeline on a counting bus) and the run loop's tick schedule.
final class FramePath {
    let flash = SimulatedFlash()
    let journal: FlashJournal
    let screen: CountingScreen
    let runtime: DeviceRuntime
    /// The alerts the ride raised (with a course: its cues and alarms).
    let alerts = AlertCounter()
    private var nextTickMs: Int64 = 1_000
    private(set) var ticks = 0

    init(positioning: Bool = false, largePanel: Bool = false, course: Course? = nil) {
        screen = CountingScreen(largePanel: largePanel)
        let opened = FlashJournal.open(storage: flash, randomSeed: 1, deviceNow: .zero)
        journal = opened.journal
        runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: NullArchive(), screen: screen,
                                     log: MemoryLog(), sensors: positioning ? PositionStream.configuration : FrameStream.configuration,
                                     wall: WallClockTime(unixMs: 1_790_000_000_000, trusted: true), at: .zero)
        runtime.bridgeConnected(at: .zero)
        if positioning {
            SimulatedBarometer.calibrationRegisters.withUnsafeBytes { runtime.receive(.barometerCalibration($0), at: .zero) }
        }
        if let course {
            runtime.command(.loadCourse(course), at: .zero)
            _ = runtime.addObserver(alerts)
        }
        runtime.command(.start, at: .zero)
    }

    /// The run loop's timer work due up to `ms`: the app core's deadlines and the 1 Hz tick
    /// (with the data source's own tick for stale/lost sensors).
    @inline(never)
    func ticks(upTo ms: Int64) {
        while true {
            var due = nextTickMs
            if let d = runtime.nextDeadline, d.milliseconds < due { due = d.milliseconds }
            guard due <= ms else { return }
            let at = MonotonicInstant(milliseconds: due)
            if due == nextTickMs {
                nextTickMs += 1_000
                runtime.tick(at: at)
            } else {
                runtime.coreTick(at: at)
            }
            ticks += 1
        }
    }

    /// One sensor frame: the socket's bytes in, everything it causes carried out.
    @inline(never)
    func frame(_ bytes: UnsafeRawBufferPointer, atMs ms: Int64, kind: InputKind = .bridge) {
        let at = MonotonicInstant(milliseconds: ms)
        switch kind {
        case .bridge: runtime.receive(.bridgePacket(bytes, truncated: false), at: at)
        case .gpsdLine: runtime.receive(.gpsdLine(bytes), at: at)
        case .barometer: runtime.receive(.barometerData(bytes), at: at)
        }
    }
}

/// What a run of the frame path measured.
struct FramePathResult {
    var frames = 0
    var frameNs: [Int64] = []
    var frameAllocations: UInt64 = 0
    var framesThatAllocated = 0
    var firstAllocatingFrame: Int?
    var ticks = 0
    var tickNs: [Int64] = []
    var tickAllocations: UInt64 = 0
    var measuredMs: Int64 = 0
    var wireBytes = 0
    var journalBytes = 0
    var journalSyncs = 0
    var samplesEmitted: UInt64 = 0
    /// With positioning: gpsd lines and barometer readings among the frames, and what they allocated.
    var gpsLines = 0
    var gpsAllocations: UInt64 = 0
    var barometerReadings = 0
    var barometerAllocations: UInt64 = 0
    var gpsFixes: UInt64 = 0
    /// With a course: the fixes its follower took, and where it ended.
    var courseFixes: UInt64 = 0
    var alerts = 0
    var courseState = "none"
}

/// Rides `warmUpMs` of frames, then measures every frame and every tick of the next
/// `measureMs`. With `timing: false` (callgrind) only the frames run, with nothing around them.
/// `streamMs`: encode at least this much ride up front (callgrind runs of different lengths
/// then spend the same on encoding, and it cancels out).
func runFramePath(warmUpMs: Int64, measureMs: Int64, timing: Bool = true, injectAllocation: Bool = false,
                  traceAllocations: Int = 0, streamMs: Int64 = 0, positioning: Bool = false, largePanel: Bool = false, course: Course? = nil) -> FramePathResult {
    let stream = FrameStream(durationMs: max(streamMs, warmUpMs + measureMs), positioning: positioning)
    let endMs = warmUpMs + measureMs
    let path = FramePath(positioning: positioning, largePanel: largePanel, course: course)
    var r = FramePathResult()
    let firstMeasured = stream.atMs.firstIndex { $0 >= warmUpMs } ?? stream.count
    r.frameNs.reserveCapacity(stream.count - firstMeasured)
    r.tickNs.reserveCapacity(Int(measureMs / 1000) + 64)
    stream.bytes.withUnsafeBytes { all in
        for i in 0..<firstMeasured {
            path.ticks(upTo: stream.atMs[i])
            path.frame(UnsafeRawBufferPointer(rebasing: all[stream.offsets[i]..<stream.offsets[i + 1]]), atMs: stream.atMs[i],
                       kind: stream.kinds[i])
        }
        path.screen.allocateOnShow = injectAllocation
        let wire0 = path.screen.wireBytes, flash0 = path.flash.bytesWritten, sync0 = path.flash.syncCount
        let samples0 = path.runtime.sensorStatus.samplesEmitted
        if !timing {
            for i in firstMeasured..<stream.count where stream.atMs[i] <= endMs {
                path.ticks(upTo: stream.atMs[i])
                path.frame(UnsafeRawBufferPointer(rebasing: all[stream.offsets[i]..<stream.offsets[i + 1]]), atMs: stream.atMs[i])
            }
            r.frames = stream.atMs[firstMeasured...].prefix { $0 <= endMs }.count
            return
        }
        for i in firstMeasured..<stream.count {
            let ms = stream.atMs[i]
            let ticks0 = path.ticks
            if traceAllocations > 0 && i == firstMeasured + 100 { bench_trace_allocations(Int32(traceAllocations)) }
            let ta0 = Allocations.count
            let tt0 = Clock.ns()
            path.ticks(upTo: ms)
            let tt1 = Clock.ns()
            let ta1 = Allocations.count
            if path.ticks != ticks0 {
                r.ticks += path.ticks - ticks0
                r.tickNs.append(tt1 - tt0)
                r.tickAllocations += ta1 - ta0
            }
            let bytes = UnsafeRawBufferPointer(rebasing: all[stream.offsets[i]..<stream.offsets[i + 1]])
            let a0 = Allocations.count
            let t0 = Clock.ns()
            path.frame(bytes, atMs: ms, kind: stream.kinds[i])
            let t1 = Clock.ns()
            let a1 = Allocations.count
            r.frameNs.append(t1 - t0)
            switch stream.kinds[i] {
            case .gpsdLine: r.gpsLines += 1; r.gpsAllocations += a1 - a0
            case .barometer: r.barometerReadings += 1; r.barometerAllocations += a1 - a0
            case .bridge: break
            }
            if a1 != a0 {
                r.frameAllocations += a1 - a0
                r.framesThatAllocated += 1
                if r.firstAllocatingFrame == nil { r.firstAllocatingFrame = i - firstMeasured }
            }
        }
        r.frames = stream.count - firstMeasured
        r.measuredMs = measureMs
        r.wireBytes = path.screen.wireBytes - wire0
        r.journalBytes = path.flash.bytesWritten - flash0
        r.journalSyncs = path.flash.syncCount - sync0
        r.samplesEmitted = path.runtime.sensorStatus.samplesEmitted - samples0
        r.gpsFixes = path.runtime.positioning.gps.counters.fixesAccepted
        r.courseFixes = path.runtime.core.courseFollower?.fixes ?? 0
        r.alerts = path.alerts.count
        r.courseState = path.runtime.core.courseFollower.map { "\($0.navigationState)" } ?? "none"
        if getenv("BIKEBENCH_DEBUG") != nil { print(path.runtime.sensorStatus.logLine) }
    }
    return r
}


/// Counts the alerts a ride raises (each is logged: its line is built when it happens).
final class AlertCounter: RideObserver {
    private(set) var count = 0
    func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant) {
        if case .alert = effect { count += 1 }
    }
}
