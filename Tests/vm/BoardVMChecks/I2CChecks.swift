import BoardHardware
import Display
import Glibc

/// I2CBus and the display driver against the kernel: the project's ssd1306-sim adapter (the
/// picture, NACKs with a Pi's errno, a controller that loses power) and i2c-stub (the SMBus
/// I2C-block path, ENODEV for a missing address).
struct I2CChecks {
    let bus: Int
    let debugfs: String
    let stubBus: Int?

    var path: String { "/dev/i2c-\(bus)" }
    var kernel: KernelDisplay { KernelDisplay(debugfs: debugfs) }

    func run() {
        print("i2c checks on \(path) (\(debugfs))\(stubBus.map { ", i2c-stub on /dev/i2c-\($0)" } ?? "")")
        kernel.setController(.ssd1306)
        do {
            try probeAndPicture(.ssd1306)
            try probeAndPicture(.sh1106)
            kernel.setController(.ssd1306)
            try brownOut()
        } catch {
            Checks.fail("no unexpected I2C error", "\(error)")
        }
        nacks()
        if let stubBus { stub(stubBus) }
    }

    /// Random frames through the driver, I2CBus and the kernel: the module's GDDRAM is the
    /// framebuffer, and equals what the emulator holds after the same transactions.
    func probeAndPicture(_ controller: OLEDController) throws(DisplayBusError) {
        kernel.setController(controller)
        let name = controller.description
        let before = kernel.state()
        let bus = try I2CBus(path: path, address: 0x3C)
        let after = kernel.state()
        Checks.check(after["commands_executed"] == (before["commands_executed"] ?? -9) + 1 && after["transactions"] == (before["transactions"] ?? -9) + 1,
                     "\(name): opening probes the address with one NOP", "\(before) -> \(after)")
        let panel = PanelConfiguration(controller: controller)
        var driver = DisplayDriver(panel: panel)
        var tee = TeeBus(first: bus, emulator: SSD1306Emulator(controller: controller))
        let baseline = kernel.state()
        try driver.start(bus: &tee)
        let k = kernel.state()
        Checks.check(k["display_on"] == 1 && k["charge_pump_on"] == 1 && k["segment_remap"] == 1 && k["com_scan_remapped"] == 1
                     && k["multiplex_rows"] == 64 && k["contrast"] == Int(panel.contrastActive)
                     && k["addressing_mode"] == (controller == .ssd1306 ? 0 : 2),
                     "\(name): the init table configures the kernel's controller", "\(k)")
        var fb = Framebuffer(width: 128, height: 64)
        var g = Generator(state: controller == .ssd1306 ? 1 : 2)
        var agree = true
        for round in 0..<12 {
            for _ in 0..<30 {
                let v = g.next()
                fb.fill(Rect(x: Int(v % 130) - 1, y: Int((v >> 8) % 66) - 1, width: Int((v >> 16) % 40), height: Int((v >> 24) % 14)),
                        on: (v >> 32) & 1 == 0)
            }
            driver.present(&fb)
            try driver.flushAll(bus: &tee)
            let diffs = kernel.differences(from: tee.emulator, baseline: baseline)
            let memory = kernel.gddram()
            let offset = controller.columnOffset
            var framebufferMatches = true
            for page in 0..<8 { for x in 0..<128 where memory[page * controller.memoryColumns + x + offset] != fb.bytes[page * 128 + x] { framebufferMatches = false } }
            if !diffs.isEmpty || !framebufferMatches {
                agree = false
                Checks.fail("\(name): frames through the kernel", "round \(round): framebuffer \(framebufferMatches ? "matches" : "differs"); \(diffs.joined(separator: "; "))")
                break
            }
        }
        if agree { Checks.check(true, "\(name): 12 random frames: kernel GDDRAM = framebuffer = emulator memory, registers and counters agree") }
        if controller == .sh1106 {
            let memory = kernel.gddram()
            let offGlass = (0..<8).flatMap { p in [0, 1, 130, 131].map { memory[p * 132 + $0] } }
            Checks.check(offGlass.allSatisfy { $0 == 0 }, "SH1106: columns 0, 1, 130, 131 (off the glass) are never written")
        }
    }

    /// The controller loses power without a bus error: dark, cleared; the driver's periodic
    /// refresh brings the frame back; after a bus error, reinitialize does.
    func brownOut() throws(DisplayBusError) {
        var bus = try I2CBus(path: path, address: 0x3C)
        var driver = DisplayDriver(panel: PanelConfiguration())
        try driver.start(bus: &bus)
        var fb = Framebuffer(width: 128, height: 64)
        fb.fill(Rect(x: 3, y: 5, width: 70, height: 40))
        fb.fill(Rect(x: 10, y: 10, width: 20, height: 20), on: false)
        driver.present(&fb)
        try driver.flushAll(bus: &bus)
        Checks.check(kernel.gddram() == fb.bytes, "the frame is in the kernel's GDDRAM")
        kernel.powerOnReset()
        let k = kernel.state()
        Checks.check(k["display_on"] == 0 && k["charge_pump_on"] == 0 && k["addressing_mode"] == 2 && kernel.gddram().allSatisfy { $0 == 0 },
                     "power-on reset: display off, charge pump off, page addressing, GDDRAM cleared", "\(k)")
        driver.refreshIfDue(atMs: 0)
        driver.refreshIfDue(atMs: DisplayDriver.refreshPeriodMs)
        try driver.flushAll(bus: &bus)
        let r = kernel.state()
        Checks.check(kernel.gddram() == fb.bytes && r["display_on"] == 1 && r["charge_pump_on"] == 1 && r["addressing_mode"] == 0 && r["segment_remap"] == 1,
                     "the periodic refresh restores state and frame on the kernel's controller", "\(r)")
        kernel.powerOnReset()
        driver.reinitialize()
        try driver.flushAll(bus: &bus)
        let s = kernel.state()
        Checks.check(kernel.gddram() == fb.bytes && s["display_on"] == 1 && s["charge_pump_on"] == 1 && s["multiplex_rows"] == 64,
                     "reinitialize restores the init table and the frame", "\(s)")
    }

    func nacks() {
        // A display at another address: the kernel NACKs with a Pi's errno.
        kernel.setNackErrno(EREMOTEIO)
        do {
            _ = try I2CBus(path: path, address: 0x3D)
            Checks.fail("nothing at 0x3D", "the probe was acknowledged")
        } catch {
            Checks.check(error == .noDevice(path: path, address: 0x3D), "a NACK with EREMOTEIO (i2c-bcm2835) is a missing device", "\(error)")
            Checks.check(error.description.contains("0x3D") && error.description.contains("i2cdetect"), "its message says to check wiring and address", error.description)
        }
        kernel.setNackErrno(ENXIO)
        do { _ = try I2CBus(path: path, address: 0x3D); Checks.fail("ENXIO NACK", "acknowledged") } catch {
            Checks.check(error == .noDevice(path: path, address: 0x3D), "a NACK with ENXIO is a missing device", "\(error)")
        }
        kernel.setNackErrno(ETIMEDOUT)
        do { _ = try I2CBus(path: path, address: 0x3D); Checks.fail("ETIMEDOUT", "acknowledged") } catch {
            if case .io(_, let e, _) = error { Checks.check(e == ETIMEDOUT, "another errno is an io error carrying it", "\(error)") } else {
                Checks.fail("another errno is an io error carrying it", "\(error)")
            }
        }
        kernel.setNackErrno(EREMOTEIO)
        // A loose connector mid-ride: writes fail while unplugged; the same bus works once back.
        do {
            let bus = try I2CBus(path: path, address: 0x3C)
            kernel.setUnplugged(true)
            var nop: [UInt8] = [OLEDCommand.nop]
            do {
                try nop.withUnsafeMutableBufferPointer { p throws(DisplayBusError) in try bus.write(control: 0, UnsafeBufferPointer(p)) }
                Checks.fail("unplugged writes fail", "acknowledged")
            } catch {
                Checks.check(error == .noDevice(path: path, address: 0x3C), "while unplugged a write is a missing device", "\(error)")
            }
            kernel.setUnplugged(false)
            try nop.withUnsafeMutableBufferPointer { p throws(DisplayBusError) in try bus.write(control: 0, UnsafeBufferPointer(p)) }
            Checks.check(bus.opens == 2, "the bus was reopened after the failed write", "\(bus.opens) opens")
        } catch {
            Checks.fail("the display answers again after a replug", "\(error)")
        }
        // The board's deferred bus: nothing opened until the first write.
        let deferred = I2CBus(deferredPath: path, address: 0x3C)
        var display = DisplayDriver(panel: PanelConfiguration())
        var d = deferred
        do {
            try display.start(bus: &d)
            Checks.check(deferred.opens == 1, "a deferred bus opens at its first write and stays open", "\(deferred.opens)")
        } catch {
            Checks.fail("a deferred bus opens at its first write", "\(error)")
        }
    }

    /// i2c-stub: a register map that accepts SMBus I2C-block writes. It proves the transfer (the
    /// bytes land in its registers), not the picture.
    func stub(_ stubBus: Int) {
        let stubPath = "/dev/i2c-\(stubBus)"
        do {
            var bus = try I2CBus(path: stubPath, address: 0x3C)
            let block: [UInt8] = (0..<32).map { UInt8(0xA0 &+ $0) }
            try block.withUnsafeBufferPointer { p throws(DisplayBusError) in try bus.write(control: OLEDControl.data, p) }
            let back = SMBus.readBytes(path: stubPath, address: 0x3C, from: OLEDControl.data, count: 32)
            Checks.check(back == block, "i2c-stub: a 32-byte I2C-block write lands in registers 0x40...0x5F", "read back \(back.map { hex($0) } ?? "nothing")")
            var driver = DisplayDriver(panel: PanelConfiguration())
            try driver.start(bus: &bus)
            var fb = Framebuffer(width: 128, height: 64)
            fb.fill(Rect(x: 0, y: 0, width: 128, height: 64))
            driver.present(&fb)
            try driver.flushAll(bus: &bus)
            let s = driver.statistics
            Checks.check(s.dataBytes >= 2 * 1024, "i2c-stub: start-up and a full frame go through the SMBus block path", "\(s)")
        } catch {
            Checks.fail("i2c-stub at 0x3C", "\(error)")
        }
        do {
            _ = try I2CBus(path: stubPath, address: 0x3D)
            Checks.fail("i2c-stub: nothing at 0x3D", "acknowledged")
        } catch {
            Checks.check(error == .noDevice(path: stubPath, address: 0x3D), "i2c-stub: ENODEV for a missing address is a missing device with the documented message", "\(error)")
        }
    }
}

/// Raw SMBus reads through the I2C_SMBUS ioctl (only the checks read back).
enum SMBus {
    struct IoctlData {
        var readWrite: UInt8
        var command: UInt8
        var size: UInt32
        var data: UnsafeMutableRawPointer?
    }

    static func readBytes(path: String, address: UInt8, from register: UInt8, count: Int) -> [UInt8]? {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard ioctl(fd, UInt(0x0703), CInt(address)) == 0 else { return nil }  // I2C_SLAVE
        var out: [UInt8] = []
        for i in 0..<count {
            var data = [UInt8](repeating: 0, count: 34)  // union i2c_smbus_data
            let r = data.withUnsafeMutableBytes { d -> Int32 in
                var args = IoctlData(readWrite: 1, command: register &+ UInt8(i), size: 2, data: d.baseAddress)  // read, BYTE_DATA
                return ioctl(fd, UInt(0x0720), &args)  // I2C_SMBUS
            }
            guard r == 0 else { return nil }
            out.append(data[0])
        }
        return out
    }
}
