import BoardHardware
import Display
import Glibc

/// The project's memlcd-sim kernel module, through its debugfs files.
struct KernelMemLCD {
    let debugfs: String

    func state() -> [String: Int] {
        var out: [String: Int] = [:]
        for line in SysFile.text("\(debugfs)/state").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { out[String(parts[0])] = Int(parts[1]) }
        }
        return out
    }

    func memory() -> [UInt8] { SysFile.read("\(debugfs)/memory") ?? [] }
    func powerLoss() { SysFile.write("\(debugfs)/power_loss", "1") }
    func setPresent(_ on: Bool) { SysFile.write("\(debugfs)/present", on ? "1" : "0") }

    /// The VCOM changes the panel saw: monotonic nanoseconds and the new level, oldest first.
    func vcomLog() -> [(ns: UInt64, level: Bool)] {
        SysFile.text("\(debugfs)/vcom_log").split(separator: "\n").compactMap { line in
            let p = line.split(separator: " ")
            guard p.count == 2, let ns = UInt64(p[0]) else { return nil }
            return (ns, p[1] == "1")
        }
    }
}

/// Every transaction to spidev (the kernel's panel) and to the emulator.
final class TeeSPI: SPIWriter {
    let device: SPIDevice
    var emulator: SharpMemoryEmulator
    init(device: SPIDevice, emulator: SharpMemoryEmulator) {
        self.device = device
        self.emulator = emulator
    }
    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        try device.write(bytes)
        try emulator.write(bytes)
    }
}

/// SPIDevice and the Sharp driver against the kernel's SPI core and spidev: the project's
/// memlcd-sim controller reads the wire as the panel does. The picture (kernel memory = emulator
/// = framebuffer), what the controller was asked (mode 0, chip select active high, the clock),
/// VCOM alternating at the panel's rate while nothing changes, a panel that lost its supply put
/// right by the rolling rewrite, the device missing at the first write and going away mid-ride.
struct MemLCDChecks {
    let bus: Int
    let debugfs: String
    let speedHz: Int

    var path: String { SPIDevice.path(bus: bus, chipSelect: 0) }
    var kernel: KernelMemLCD { KernelMemLCD(debugfs: debugfs) }
    var model: SharpMemoryDriver.Model {
        let s = kernel.state()
        return SharpMemoryDriver.Model(width: s["width"] ?? 400, height: s["height"] ?? 240)
    }

    static func nowMs() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000
    }

    func run() {
        print("memory LCD checks on \(path) (\(debugfs)), \(model.width)x\(model.height) at \(speedHz) Hz")
        absentAtFirstWrite()
        do {
            try picture()
            try vcomWhileIdle()
            try rewriteAfterPowerLoss()
            try goneAndBack()
        } catch {
            Checks.fail("no unexpected SPI error", "\(error)")
        }
        panelIgnoresWhatItCannotTake()
    }

    /// No device node yet: the first write says to enable SPI; once it exists the same device
    /// object opens it.
    func absentAtFirstWrite() {
        kernel.setPresent(false)
        let device = SPIDevice(deferredPath: path, mode: .sharpMemoryLCD, speedHz: speedHz)
        var byte: UInt8 = 0
        do {
            try withUnsafePointer(to: &byte) { p throws(DisplayBusError) in try device.write(UnsafeBufferPointer(start: p, count: 1)) }
            Checks.fail("a missing spidev node is reported", "the write succeeded")
        } catch {
            Checks.check(error == .noSPIDevice(path: path) && "\(error)".contains("dtparam=spi=on"),
                         "a missing spidev node is noSPIDevice, saying to enable SPI", "\(error)")
        }
        kernel.setPresent(true)
        var bytes: [UInt8] = [0x00, 0x00]
        do {
            try bytes.withUnsafeMutableBufferPointer { b throws(DisplayBusError) in try device.write(UnsafeBufferPointer(b)) }
            Checks.check(device.opens == 1 && device.transactions == 1, "the same device opens once the node exists")
        } catch {
            Checks.fail("the same device opens once the node exists", "\(error)")
        }
    }

    /// Random frames, partly flushed while VCOM flips: the kernel's memory equals the emulator's
    /// after every step, and the framebuffer once flushed.
    func picture() throws(DisplayBusError) {
        let m = model
        let device = try SPIDevice(path: path, mode: .sharpMemoryLCD, speedHz: speedHz)
        let tee = TeeSPI(device: device, emulator: SharpMemoryEmulator(model: m))
        var link = SPIDisplayLink(port: tee)
        let lines = SharpMemoryDriver.linesPerStep(width: m.width, clockHz: speedHz)
        var driver = SharpMemoryDriver(model: m, linesPerStep: lines)
        let before = kernel.state()
        try driver.start(bus: &link)
        let k = kernel.state()
        Checks.check(k["clears"] == (before["clears"] ?? -9) + 1 && k["lines_written"] == (before["lines_written"] ?? -9) + m.height,
                     "start clears the panel and writes every line", "\(before) -> \(k)")
        Checks.check(k["last_speed_hz"] == speedHz && k["last_bits"] == 8 && (k["last_mode"] ?? 0) & 0x04 != 0 && (k["last_mode"] ?? 3) & 0x03 == 0,
                     "spidev sends mode 0, chip select active high, 8-bit words at \(speedHz) Hz", "\(k)")
        var fb = Framebuffer(width: m.width, height: m.height)
        var g = Generator(state: 0x3E3)
        var t: Int64 = 0
        var agree = true
        for round in 0..<40 where agree {
            for _ in 0..<10 {
                fb.fill(Rect(x: g.below(m.width + 2) - 1, y: g.below(m.height + 2) - 1, width: g.below(90), height: g.below(40)), on: g.chance(50))
            }
            driver.present(&fb)
            t += Int64(g.below(400))
            driver.refreshIfDue(atMs: t)
            for _ in 0..<g.below(6) {
                try driver.flushStep(bus: &link)
                if kernel.memory() != tee.emulator.memory {
                    agree = false
                    Checks.fail("random frames: kernel memory = emulator after every step", "round \(round) (seed 0x3E3)")
                    break
                }
            }
        }
        if agree { Checks.check(true, "random frames: kernel memory = emulator after every step (40 rounds)") }
        try driver.flushAll(bus: &link)
        Checks.check(kernel.memory() == tee.emulator.memory && tee.emulator.panelImage().bytes == fb.bytes,
                     "flushed: kernel memory = emulator = framebuffer")
        let s = kernel.state()
        Checks.check(s["malformed"] == 0 && s["deselected"] == 0 && s["wrong_mode"] == 0 && s["too_fast"] == 0 && s["too_long"] == 0,
                     "the panel took every transaction", "\(s)")
        Checks.check(tee.emulator.vcom == (s["vcom"] == 1), "VCOM: kernel \(s["vcom"] ?? -1), emulator \(tee.emulator.vcom)")
    }

    /// Nothing changes on screen for 3.2 s; the driver's duty runs every `dutyPeriodMs` of real
    /// time: the panel sees VCOM change every 500 ms, never more than a second apart.
    func vcomWhileIdle() throws(DisplayBusError) {
        let m = model
        var link = SPIDisplayLink(port: try SPIDevice(path: path, mode: .sharpMemoryLCD, speedHz: speedHz))
        var driver = SharpMemoryDriver(model: m, linesPerStep: SharpMemoryDriver.linesPerStep(width: m.width, clockHz: speedHz))
        try driver.start(bus: &link)
        let before = kernel.vcomLog().last?.ns ?? 0
        let start = Self.nowMs()
        while Self.nowMs() - start < 3_200 {
            driver.refreshIfDue(atMs: Self.nowMs())
            try driver.flushAll(bus: &link)
            usleep(UInt32(driver.dutyPeriodMs! * 1000))
        }
        let changes = kernel.vcomLog().filter { $0.ns > before }
        let gaps = zip(changes.dropFirst(), changes).map { Double($0.ns - $1.ns) / 1e6 }
        Checks.check(changes.count >= 5 && gaps.allSatisfy { $0 <= 1_000 && $0 >= 250 },
                     "idle: VCOM changes every ~500 ms, none more than 1 s apart (\(changes.count) changes, gaps \(gaps.map { Int($0) }) ms)")
        Checks.check(zip(changes.dropFirst(), changes).allSatisfy { $0.level != $1.level }, "idle: VCOM alternates")
    }

    /// The panel loses its supply (nothing on SPI says so): within the rewrite period of VCOM
    /// flips, with no change to the picture, the kernel's memory is the frame again.
    func rewriteAfterPowerLoss() throws(DisplayBusError) {
        let m = model
        let tee = TeeSPI(device: try SPIDevice(path: path, mode: .sharpMemoryLCD, speedHz: speedHz), emulator: SharpMemoryEmulator(model: m))
        var link = SPIDisplayLink(port: tee)
        var driver = SharpMemoryDriver(model: m, linesPerStep: SharpMemoryDriver.linesPerStep(width: m.width, clockHz: speedHz))
        try driver.start(bus: &link)
        var fb = Framebuffer(width: m.width, height: m.height)
        fb.fill(Rect(x: 8, y: 8, width: m.width / 2, height: m.height / 3))
        _ = fb.drawText("32.45", font: .digitsHuge, x: 10, y: m.height / 2)
        driver.present(&fb)
        try driver.flushAll(bus: &link)
        let frame = kernel.memory()
        var t: Int64 = 100_000
        driver.refreshIfDue(atMs: t)
        kernel.powerLoss()
        Checks.check(kernel.memory() != frame, "power loss: the panel's memory is no longer the frame")
        var backAfterMs: Int64?
        while t < 100_000 + SharpMemoryDriver.rewritePeriodMs + 1_000 {
            t += SharpMemoryDriver.vcomPeriodMs / 2
            driver.refreshIfDue(atMs: t)
            try driver.flushAll(bus: &link)
            if backAfterMs == nil && kernel.memory() == frame { backAfterMs = t - 100_000 }
        }
        Checks.check((backAfterMs ?? .max) <= SharpMemoryDriver.rewritePeriodMs,
                     "power loss: the rolling rewrite puts the frame back within \(SharpMemoryDriver.rewritePeriodMs) ms of panel time (\(backAfterMs.map(String.init) ?? "never") ms)")
    }

    /// The device goes away under an open descriptor (ESHUTDOWN) and comes back: the error says
    /// what to do, the next write opens it again, and after `reinitialize` the panel is cleared
    /// and whole.
    func goneAndBack() throws(DisplayBusError) {
        let m = model
        let device = try SPIDevice(path: path, mode: .sharpMemoryLCD, speedHz: speedHz)
        var link = SPIDisplayLink(port: device)
        var driver = SharpMemoryDriver(model: m, linesPerStep: SharpMemoryDriver.linesPerStep(width: m.width, clockHz: speedHz))
        try driver.start(bus: &link)
        var fb = Framebuffer(width: m.width, height: m.height)
        fb.fill(Rect(x: 0, y: 0, width: m.width, height: 16))
        driver.present(&fb)
        kernel.setPresent(false)
        do {
            try driver.flushAll(bus: &link)
            Checks.fail("a device gone mid-ride is an error", "no error")
        } catch {
            Checks.check(error == .noSPIDevice(path: path), "a device gone mid-ride is noSPIDevice (ESHUTDOWN)", "\(error)")
        }
        kernel.setPresent(true)
        kernel.powerLoss()
        driver.reinitialize()
        try driver.flushAll(bus: &link)
        var e = SharpMemoryEmulator(model: m)
        e.powerLoss()
        var expected = SPIDisplayLink(port: e)
        var reference = SharpMemoryDriver(model: m)
        try reference.start(bus: &expected)
        var same = fb
        same.markAllDirty()  // `fb`'s dirty bands went to `driver` already
        reference.present(&same)
        try reference.flushAll(bus: &expected)
        Checks.check(device.opens == 2 && kernel.memory() == expected.port.memory,
                     "back: reopened, cleared and the whole frame written (opens \(device.opens))")
    }

    /// What the panel would not take is ignored by it (and counted by the module): chip select
    /// active low (the panel is never selected), a clock above its maximum.
    func panelIgnoresWhatItCannotTake() {
        let before = kernel.state()
        let memory = kernel.memory()
        var bytes: [UInt8] = [SharpMemoryDriver.Command.clearAll, 0]
        do {
            let low = try SPIDevice(path: path, mode: SPIDevice.Mode(), speedHz: speedHz)
            try bytes.withUnsafeMutableBufferPointer { b throws(DisplayBusError) in try low.write(UnsafeBufferPointer(b)) }
            let fast = try SPIDevice(path: path, mode: .sharpMemoryLCD, speedHz: 4_000_000)
            try bytes.withUnsafeMutableBufferPointer { b throws(DisplayBusError) in try fast.write(UnsafeBufferPointer(b)) }
        } catch {
            Checks.fail("odd settings still reach the controller", "\(error)")
            return
        }
        let after = kernel.state()
        Checks.check(after["deselected"] == (before["deselected"] ?? -9) + 1 && after["too_fast"] == (before["too_fast"] ?? -9) + 1
                     && kernel.memory() == memory,
                     "chip select active low and a 4 MHz clock do not reach the panel", "\(before) -> \(after)")
    }
}
