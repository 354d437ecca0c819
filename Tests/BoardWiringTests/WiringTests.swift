import AppCore
import BoardIO
import BoardWiring
import Configuration
import Control
import Device
import Display
import Foundation
import Glibc
import Journal
import RideModel
import Sensors
import Testing

/// Button lines the test presses (the board's are GPIO lines through libgpiod).
final class FakeButtons: ButtonLines {
    var levels: [Bool]
    var onEdge: ((Int, Bool, UInt64) -> Void)?
    var failAttach: GPIOLikeError?
    private(set) var detached = false

    struct GPIOLikeError: Error, CustomStringConvertible {
        var description: String
    }

    init(count: Int = 3, held: Set<Int> = []) { levels = (0..<count).map { held.contains($0) } }

    func currentLevels() throws -> [Bool] { levels }
    func attach(to loop: EventLoop, onEdge: @escaping (Int, Bool, UInt64) -> Void) throws {
        if let failAttach { throw failAttach }
        self.onEdge = onEdge
    }
    func detach() { detached = true }

    /// An edge at the loop's time (the kernel's timestamp, CLOCK_MONOTONIC ns).
    func edge(_ index: Int, _ pressed: Bool, atMs ms: Int64) {
        levels[index] = pressed
        onEdge?(index, pressed, UInt64(ms) * 1_000_000)
    }

    /// Edges the kernel has queued that the loop has not read yet (its turn is still running).
    var queued: [(index: Int, pressed: Bool, ms: Int64)] = []
    func queue(_ index: Int, _ pressed: Bool, atMs ms: Int64) {
        levels[index] = pressed
        queued.append((index, pressed, ms))
    }
    /// The loop's next turn: the line's descriptor is ready and its edges are read.
    func readQueuedEdges() {
        let edges = queued
        queued.removeAll()
        for e in edges { onEdge?(e.index, e.pressed, UInt64(e.ms) * 1_000_000) }
    }
}

/// The buzzer line: what it was set to, and when.
final class FakeLine: AlertLine {
    var changes: [(on: Bool, atMs: Int64)] = []
    var clock: () -> Int64 = { 0 }
    func set(active: Bool) throws { changes.append((active, clock())) }
}

/// A display bus into the SSD1306 emulator that counts page (data) transactions.
struct EmulatorBus: DisplayBus {
    var emulator = SSD1306Emulator()
    var dataTransactions = 0
    var failing = false
    mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        if failing { throw .noDevice(path: "/dev/i2c-9", address: 0x3C) }
        if control == OLEDControl.data { dataTransactions += 1 }
        try emulator.write(control: control, bytes)
    }
}

final class KeptArchive: RideArchivePort {
    var stored: [RideID] = []
    func store(rideID: RideID, records: [RideRecord]) throws -> String { stored.append(rideID); return "kept" }
    func delete(rideID: RideID) throws { stored.removeAll { $0 == rideID } }
}

/// `bikecomputer run`'s wiring, in process, on a manual clock: the same components, timers and
/// handlers as on the board, with the display on an emulator, buttons and buzzer doubles, the
/// journal on simulated flash and real sockets for the bridge and the control socket.
final class Rig {
    let loop = ManualEventLoop(startMs: 10_000)
    let dir: String
    let flash = SimulatedFlash()
    /// The flash with syncs the test completes (`cardCatchesUp`), as the board's io_uring; nil:
    /// every commit syncs at once.
    let card: DeferredSyncFlash?
    let memory = MemoryLog(capacity: 1024)
    let log: CountingLog
    let screen: DisplayScreen<EmulatorBus>
    let buttons: FakeButtons
    let buzzer = FakeLine()
    let archive = KeptArchive()
    let settings: DeviceSettings
    let wiring: BoardWiring

    init(sensors: [DeviceConfig.Sensor] = [], buttons: FakeButtons = FakeButtons(), displayFailing: Bool = false,
         buzzer present: Bool = true, configFile: String? = nil, deferredCard: Bool = false) throws {
        dir = "/tmp/wiring-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        log = CountingLog(memory)
        self.buttons = buttons
        var config = DeviceConfig()
        config.control.socket = dir + "/control.sock"
        config.bridge.path = dir + "/bridge.sock"
        config.sensors = sensors
        config.training.autoPause = false
        settings = try ConfigMapping.settings(config, dataDirectory: dir + "/data")
        var bus = EmulatorBus()
        bus.failing = displayFailing
        screen = DisplayScreen(bus: bus, panel: settings.panel)
        let devices = BoardDevices(display: screen, displayState: "ok (emulator)", buttons: buttons, buttonsState: "ok (test lines)",
                                   buzzer: present ? buzzer : nil, buzzerState: present ? "ok" : "none")
        var options = BoardWiring.Options()
        options.rideActiveFile = dir + "/ride-active"
        options.wallClock = { WallClockTime(unixMs: 1_790_000_000_000, trusted: true) }
        options.streamID = 0xFEED
        // The config file pairing rewrites (its sensors are the ones above).
        options.configPath = dir + "/config.toml"
        options.config = config
        if let configFile { try configFile.write(toFile: options.configPath, atomically: true, encoding: .utf8) }
        card = deferredCard ? DeferredSyncFlash(flash) : nil
        let opened = FlashJournal.open(storage: card ?? flash, randomSeed: 5, deviceNow: MonotonicInstant(milliseconds: loop.nowMs))
        wiring = try BoardWiring(loop: loop, opened: opened, archive: archive, settings: settings, devices: devices,
                                 options: options, log: log)
        let l = loop
        buzzer.clock = { l.nowMs }
    }

    deinit {
        wiring.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    var runtime: DeviceRuntime { wiring.runtime }

    /// The deferred card completes every sync it holds (the journal's eventfd fires on the board).
    func cardCatchesUp() {
        guard let card else { return }
        for _ in 0..<64 where card.inFlight > 0 {
            card.finishNext()
            runtime.syncProgress(at: MonotonicInstant(milliseconds: loop.nowMs))
            wiring.afterInputs()
        }
    }

    /// A press of line `index` released after 100 ms, then `ms` more of the loop.
    func tap(_ index: Int, thenRunMs ms: Int64 = 500) {
        buttons.edge(index, true, atMs: loop.nowMs)
        run(ms: 100)
        buttons.edge(index, false, atMs: loop.nowMs)
        run(ms: ms)
    }

    func calls(_ handler: String) -> UInt64 { loop.stats.handlers.first { $0.name == handler }?.calls ?? 0 }

    /// Runs the loop for `ms`, checking the sockets every `stepMs`.
    func run(ms: Int64, stepMs: Int64 = 50) {
        var left = ms
        while left > 0 {
            let step = min(stepMs, left)
            loop.advanceTime(byMs: step)
            loop.pollDescriptors()
            left -= step
        }
    }

    func status() throws -> [String: Any] {
        let line = wiring.controlLine("status").line
        #expect(line.hasPrefix("ok {"), "\(line)")
        return try #require(JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
    }
}

/// A client of a Unix socket, non-blocking, read by polling (the loop is on this thread).
final class SocketClient {
    let fd: Int32

    init(path: String, type: Int32) throws {
        fd = socket(AF_UNIX, type, 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        _ = withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            path.utf8CString.withUnsafeBytes { src in memcpy(raw.baseAddress!, src.baseAddress!, min(src.count, raw.count - 1)) }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else { close(fd); throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    func read() -> String {
        var buf = [UInt8](repeating: 0, count: 65_536)
        var out: [UInt8] = []
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}

@Suite(.serialized) struct WiringTests {
    /// Idle, the fallback tick wakes the loop once a second; riding, the core's record instants
    /// are the ticks (the fallback is pushed back each time), so the device still wakes once a
    /// second, not twice.
    @Test func ticksFollowTheCoreWhileRidingAndTheSecondOtherwise() throws {
        let rig = try Rig()
        rig.run(ms: 5_000)
        #expect(rig.wiring.ticks == 5)
        #expect(rig.calls("tick") == 5 && rig.calls("core.deadline") == 0)
        #expect(rig.wiring.controlLine("start").line.hasPrefix("ok prepared"))
        rig.run(ms: 3_000)
        #expect(rig.runtime.state == .running, "the countdown ran on the core's deadlines")
        let ticks0 = rig.wiring.ticks, wakeups0 = rig.calls("tick") + rig.calls("core.deadline")
        rig.run(ms: 10_000)
        #expect(rig.wiring.ticks - ticks0 == 10, "one tick per second while riding")
        // Whichever timer comes first at a record instant (on this clock they tie), the other is
        // re-armed: the loop wakes once a second for the tick, not twice.
        #expect(rig.calls("tick") + rig.calls("core.deadline") - wakeups0 == 10)
        #expect(rig.runtime.core.screen.timerMs >= 9_000)
    }

    /// After every input the core's deadline timer is re-armed where the core wants it: a long
    /// press ends the ride at its deadline with no other input, through the debounced buttons.
    @Test func deadlinesAreReArmedAfterButtonInput() throws {
        let rig = try Rig()
        rig.buttons.edge(0, true, atMs: rig.loop.nowMs)
        rig.run(ms: 100)
        rig.buttons.edge(0, false, atMs: rig.loop.nowMs)
        rig.run(ms: 4_000)
        #expect(rig.runtime.state == .running)
        #expect(rig.calls("buttons.debounce") == 2, "a press and a release, each settled by its own timer")
        // Pause: acts on the press.
        rig.buttons.edge(0, true, atMs: rig.loop.nowMs)
        rig.run(ms: 100)
        rig.buttons.edge(0, false, atMs: rig.loop.nowMs)
        rig.run(ms: 500)
        #expect(rig.runtime.state == .paused)
        // Hold start/pause while paused: the ride ends at the long-press deadline, while held.
        rig.buttons.edge(0, true, atMs: rig.loop.nowMs)
        rig.run(ms: 1_400)
        #expect(rig.runtime.state == .paused)
        rig.run(ms: 200)
        #expect(rig.runtime.state == .ended, "the long press fired at its deadline, the button still held")
        #expect(rig.archive.stored.count == 1, "the saved ride's file was written")
        rig.buttons.edge(0, false, atMs: rig.loop.nowMs)
        rig.run(ms: 100)
        #expect(rig.runtime.state == .ended)
    }

    /// A tap on START while paused resumes the ride even when the loop reaches the long-press
    /// deadline before it has read the release: one turn longer than the rest of the hold (a slow
    /// handler, a loaded CPU) and the core's deadline timer fires in it, the release still queued
    /// in the line. The queued edges are read before the long press is decided; before, the tap
    /// ended the ride.
    @Test func aTapReadLateIsNotALongPress() throws {
        let rig = try Rig()
        rig.tap(0, thenRunMs: 4_000)
        rig.tap(0)
        #expect(rig.runtime.state == .paused)
        let down = rig.loop.nowMs
        rig.buttons.edge(0, true, atMs: down)
        rig.run(ms: 100) // the press settles: a hold that would end the ride at down + 1530 ms
        rig.buttons.queue(0, false, atMs: down + 400) // released, in the line's queue, not read
        rig.loop.advanceTime(toMs: down + 1_800) // one long turn: every timer due in it fires
        #expect(rig.runtime.state == .running, "a 400 ms tap resumes the ride; it does not end it")
        rig.buttons.readQueuedEdges() // the next turn reads what is left in the line
        rig.run(ms: 200)
        #expect(rig.runtime.state == .running)
        #expect(rig.archive.stored.isEmpty, "no ride was ended and saved")
        // A real long press still ends it, at its deadline while held.
        rig.tap(0)
        #expect(rig.runtime.state == .paused)
        rig.buttons.edge(0, true, atMs: rig.loop.nowMs)
        rig.run(ms: 1_700)
        #expect(rig.runtime.state == .ended)
    }

    /// `ctl status` `lap` is the lap the screen shows: it changes once the lap's record is
    /// durable, not at the press (the card completes each sync when the test says). It was the
    /// core's lap, which changes at the press: a status could call a lap taken that a power cut
    /// would still lose (the dm-log-writes test's marks trust it).
    @Test func theStatusLapChangesOnlyOnceTheLapIsDurable() throws {
        let rig = try Rig(deferredCard: true)
        rig.tap(0, thenRunMs: 0)
        for _ in 0..<40 {
            rig.run(ms: 100)
            rig.cardCatchesUp()
        }
        #expect(rig.runtime.state == .running)
        let lap = try #require(try rig.status()["lap"] as? Int)
        #expect(lap == 1)
        rig.tap(1, thenRunMs: 100) // LAP acts on its press
        #expect(rig.runtime.core.screen.lapNumber == 2, "the lap was taken")
        #expect(rig.card!.inFlight > 0, "its record is being synced")
        #expect(try rig.status()["lap"] as? Int == 1, "the status called the lap taken before it was durable")
        rig.cardCatchesUp()
        #expect(try rig.status()["lap"] as? Int == 2, "durable: the status shows it")
    }

    /// `ctl status` `buttons` counts the edges read and what the debouncer made of them: a press
    /// shorter than `debounce_ms` by the kernel's timestamps is a glitch with its length, not a
    /// press; an edge whose timestamp is on another clock is restamped and counted. `screen`
    /// says what the screen shows.
    @Test func theStatusTellsAGlitchFromAPress() throws {
        let rig = try Rig()
        var st = try rig.status()
        var b = try #require(st["buttons"] as? [String: Any])
        #expect(b["edges"] as? Int == 0 && b["glitches"] as? Int == 0)
        #expect(st["screen"] as? String == "idle")
        let t = rig.loop.nowMs
        rig.buttons.edge(0, true, atMs: t)
        rig.run(ms: 12)
        rig.buttons.edge(0, false, atMs: t + 12) // 12 ms: shorter than the 30 ms debounce
        rig.run(ms: 200)
        #expect(rig.runtime.state == .idle, "a 12 ms glitch is not a press")
        st = try rig.status()
        b = try #require(st["buttons"] as? [String: Any])
        #expect(b["edges"] as? Int == 2)
        #expect(b["glitches"] as? Int == 1)
        #expect(b["last_glitch_ms"] as? Int == 12)
        #expect(b["edges_restamped"] as? Int == 0)
        rig.buttons.edge(0, true, atMs: rig.loop.nowMs + 60_000) // on another clock: ahead of the loop's
        rig.run(ms: 100)
        rig.buttons.edge(0, false, atMs: rig.loop.nowMs)
        rig.run(ms: 200)
        #expect(rig.runtime.state == .prepared, "the restamped press was taken")
        b = try #require(try rig.status()["buttons"] as? [String: Any])
        #expect(b["edges"] as? Int == 4 && b["edges_restamped"] as? Int == 1 && b["glitches"] as? Int == 1)
        #expect(try rig.status()["screen"] as? String != "idle")
    }

    /// A button held at boot gives no press until it is released and pressed again.
    @Test func aButtonHeldAtBootIsNotAPress() throws {
        let rig = try Rig(buttons: FakeButtons(held: [0]))
        rig.buttons.edge(0, false, atMs: rig.loop.nowMs)
        rig.run(ms: 200)
        #expect(rig.runtime.state == .idle)
        rig.buttons.edge(0, true, atMs: rig.loop.nowMs)
        rig.run(ms: 200)
        #expect(rig.runtime.state == .prepared)
    }

    /// The display sends one page per loop turn: the first in the turn that queued it, then one
    /// per turn until none is pending.
    @Test func flushStepsSendOnePagePerTurn() throws {
        let rig = try Rig()
        rig.run(ms: 2_000)
        let pages0 = rig.screen.pagesSent, steps0 = rig.wiring.display.flushSteps
        _ = rig.wiring.controlLine("start")
        #expect(rig.screen.hasPendingPages)
        rig.loop.runDueTimers()
        #expect(rig.screen.pagesSent == pages0 + 1, "the first page in the turn that queued it")
        var turns = 1
        while rig.screen.hasPendingPages && turns < 20 {
            let before = rig.screen.pagesSent
            rig.loop.advanceTime(byMs: 1)
            #expect(rig.screen.pagesSent - before <= 1, "at most one page per turn")
            turns += 1
        }
        #expect(!rig.screen.hasPendingPages)
        #expect(rig.screen.pagesSent - pages0 >= 2, "the countdown screen changes several pages")
        #expect(rig.wiring.display.flushSteps - steps0 == UInt64(turns))
        // The emulator shows what the driver sent, lit.
        #expect(rig.screen.bus.emulator.isLit)
    }

    /// Control lines over the real socket are answered by the runtime; `status` carries the
    /// runtime's state with every component's figures.
    @Test func controlSocketAndStatus() throws {
        let rig = try Rig()
        rig.run(ms: 1_000)
        let c = try SocketClient(path: rig.settings.controlSocket, type: Int32(SOCK_STREAM.rawValue))
        rig.loop.pollDescriptors()
        c.send(Array("start\nstatus\nbogus\n".utf8))
        var text = ""
        for _ in 0..<50 where text.split(separator: "\n").count < 3 {
            rig.loop.pollDescriptors()
            text += c.read()
        }
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first?.hasPrefix("ok prepared: countdown started") == true, "\(lines)")
        #expect(lines.last?.hasPrefix("error unknown command 'bogus'") == true)
        let json = try #require(JSONSerialization.jsonObject(with: Data(lines[1].dropFirst(3).utf8)) as? [String: Any])
        #expect(json["state"] as? String == "prepared")
        let hardware = try #require(json["hardware"] as? [String: Any])
        #expect(hardware["display"] as? String == "ok (emulator)")
        #expect(hardware["buttons"] as? String == "ok (test lines)")
        #expect(hardware["errors"] as? Int == 0)
        let bridge = try #require(json["bridge"] as? [String: Any])
        #expect(bridge["connected"] as? Bool == false)
        let display = try #require(json["display"] as? [String: Any])
        #expect((display["pages_sent"] as? Int ?? 0) > 0)
        let loopStats = try #require(json["loop"] as? [String: Any])
        let names = Set((loopStats["handlers"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
        #expect(names.isSuperset(of: ["tick", "control.client"]), "\(names)")
        #expect(json["journal_counters"] is [String: Any])
        #expect(json["uptime_ms"] as? Int == 1_000)
        #expect(FileManager.default.fileExists(atPath: rig.dir + "/ride-active"), "a ride in progress marks the file")
    }

    /// Hardware that is missing or fails is counted and shown; the device runs on.
    @Test func failingHardwareIsCountedAndShown() throws {
        let buttons = FakeButtons()
        buttons.failAttach = .init(description: "line 17 busy")
        let rig = try Rig(buttons: buttons, displayFailing: true)
        let st = try rig.status()
        let hardware = try #require(st["hardware"] as? [String: Any])
        #expect(hardware["errors"] as? Int == 2)
        #expect((hardware["buttons"] as? String)?.hasPrefix("failed: line 17 busy") == true)
        #expect((hardware["display"] as? String)?.hasPrefix("failed: ") == true, "\(hardware)")
        #expect(rig.log.errors == 2)
        #expect(rig.wiring.controlLine("start").line.hasPrefix("ok prepared"), "the device runs on")
    }

    /// Bridge frames through the real socket reach the ride; a sensor lost while riding sounds
    /// the buzzer for its pulse.
    @Test func bridgeFramesAndALostSensorSoundTheBuzzer() throws {
        var hr = DeviceConfig.Sensor(transport: .ble, role: .heartRate)
        hr.bleAddress = "C0:FF:EE:00:00:01"
        let rig = try Rig(sensors: [hr])
        let bridge = try SocketClient(path: rig.settings.bridgePath, type: Int32(SOCK_SEQPACKET.rawValue))
        rig.loop.pollDescriptors()
        let who = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:01")!)
        func send(bpm: UInt8) {
            bridge.send(BridgeFrame(bridgeTimeUs: 0, .data(who, profileCode: 0x2A37, Payload([0x00, bpm])!)).encoded().bytes)
        }
        send(bpm: 120)
        rig.run(ms: 100)
        #expect(rig.runtime.core.screen[.heartRate] == 120)
        #expect(rig.runtime.core.screen.sensor(.heartRate) == .connected)
        _ = rig.wiring.controlLine("start")
        for _ in 0..<6 {
            send(bpm: 130)
            rig.run(ms: 1_000)
        }
        #expect(rig.runtime.state == .running)
        #expect(rig.buzzer.changes.isEmpty)
        // The strap falls silent: stale, then lost after the data source's lost time.
        rig.run(ms: 11_000)
        #expect(rig.runtime.core.screen.sensor(.heartRate) == .lost)
        let on = try #require(rig.buzzer.changes.first)
        #expect(on.on)
        #expect(rig.buzzer.changes.count == 2 && rig.buzzer.changes[1].on == false)
        #expect(rig.buzzer.changes[1].atMs - on.atMs == BuzzerComponent.pulseMs)
        let st = try rig.status()
        let b = try #require(st["bridge"] as? [String: Any])
        #expect(b["connected"] as? Bool == true && b["frames"] as? Int == 7)
    }

    /// SIGTERM's path: the journal durable, the panel dark, the loop stopped; closing removes the
    /// ride-active file and releases the lines.
    @Test func shutdownAndClose() throws {
        let rig = try Rig()
        _ = rig.wiring.controlLine("start")
        rig.run(ms: 5_000)
        rig.wiring.shutdown(signal: SIGTERM)
        #expect(rig.loop.isStopped && rig.wiring.isStopped)
        #expect(rig.wiring.journal.writer.pendingCount == 0, "the journal is durable")
        #expect(rig.memory.lines.elements.contains { $0.contains("journal synced for shutdown") })
        #expect(rig.screen.bus.emulator.displayOn == false, "the panel is off")
        rig.wiring.close()
        #expect(!FileManager.default.fileExists(atPath: rig.dir + "/ride-active"))
        #expect(rig.buttons.detached)
    }
}
