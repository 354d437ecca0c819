import BoardHardware
import BoardIO
import Glibc

/// The GPIO shim and BoardHardware against gpio-sim: bias reaching the chip, active-low, edges
/// with CLOCK_MONOTONIC timestamps, bounces, a busy line naming its holder, missing lines and
/// chips, outputs read back, and the buttons on the real epoll loop.
struct GPIOChecks {
    let chip: String
    /// gpio-sim's sysfs directory of the chip (.../gpio-sim.N/gpiochipM), with sim_gpioK/pull
    /// (what the simulated outside world does) and sim_gpioK/value (the line's level).
    let simDirectory: String
    let lineCount: UInt32
    let expectedAPI: Int

    // Line offsets (the project's default pins, and spare lines for the other checks).
    let start: UInt32 = 17, lap: UInt32 = 27, page: UInt32 = 22, buzzer: UInt32 = 18

    func pull(_ offset: UInt32) -> String { SysFile.text("\(simDirectory)/sim_gpio\(offset)/pull") }
    func setPull(_ offset: UInt32, _ value: String) { SysFile.write("\(simDirectory)/sim_gpio\(offset)/pull", value) }
    func level(_ offset: UInt32) -> String { SysFile.text("\(simDirectory)/sim_gpio\(offset)/value") }
    func press(_ offset: UInt32) { setPull(offset, "pull-down") }     // button to ground
    func release(_ offset: UInt32) { setPull(offset, "pull-up") }

    /// Waits until `fd` is readable (at most `ms`).
    func readable(_ fd: FileDescriptor, ms: Int32 = 2_000) -> Bool {
        var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, ms) == 1
    }

    /// Reads edges until `count` arrived or nothing more comes within 500 ms.
    func edges(_ line: GPIOInputLine, count: Int) throws(GPIOError) -> [GPIOEdge] {
        var out: [GPIOEdge] = []
        while out.count < count, readable(line.eventFD, ms: out.isEmpty ? 2_000 : 500) {
            try line.readEdges { out.append($0) }
        }
        return out
    }

    func run() {
        print("gpio checks on \(chip) (\(simDirectory)), libgpiod API \(gpiodAPIVersion), expected \(expectedAPI)")
        Checks.check(gpiodAPIVersion == expectedAPI, "built against the libgpiod API the build asked for",
                     "the shim says v\(gpiodAPIVersion), this build was made for v\(expectedAPI)")
        Checks.check(gpiodLibraryVersion.hasPrefix("\(expectedAPI)."), "the linked libgpiod is a \(expectedAPI).x library",
                     "it says \(gpiodLibraryVersion)")
        do {
            try inputs()
            try bounces()
            try busyAndMissing()
            try outputs()
            try buttonsOnTheEventLoop()
            try otherBiases()
        } catch {
            Checks.fail("no unexpected GPIO error", "\(error)")
        }
        notAChip()
    }

    func inputs() throws(GPIOError) {
        Checks.check(pull(start) == "pull-down", "gpio-sim lines start pulled down", pull(start))
        let line = try GPIOInputLine(chip: chip, offset: start, activeLow: true, bias: .pullUp, consumer: "vm-check")
        Checks.check(pull(start) == "pull-up", "a pull-up request reaches the chip", "sim pull is \(pull(start))")
        Checks.check(level(start) == "1", "pulled up, the line is high", level(start))
        Checks.check(try !line.isActive(), "active-low: high reads as released")
        Checks.check(try line.readEdges { _ in } == 0, "no edge before a press")

        let before = MonotonicClock.nowNs
        press(start)
        let down = try edges(line, count: 1)
        let after = MonotonicClock.nowNs
        Checks.check(down.count == 1 && down[0].active, "a press gives exactly one edge, to active", "\(down)")
        if let e = down.first {
            Checks.check(e.timestampNs >= before && e.timestampNs <= after, "the edge carries a CLOCK_MONOTONIC timestamp",
                         "\(e.timestampNs) not in [\(before), \(after)]")
        }
        Checks.check(try line.isActive(), "pressed (line low) reads as active")
        release(start)
        let up = try edges(line, count: 2)
        Checks.check(up.count == 1 && !up[0].active, "a release gives exactly one edge, to inactive", "\(up)")
        if down.count == 1, up.count == 1 {
            Checks.check(up[0].timestampNs > down[0].timestampNs, "timestamps increase")
        }
        Checks.check(line.untrustedTimestamps == 0, "no timestamp had to be replaced", "\(line.untrustedTimestamps)")
    }

    func bounces() throws(GPIOError) {
        let line = try GPIOInputLine(chip: chip, offset: lap, activeLow: true, bias: .pullUp, consumer: "vm-check")
        for _ in 0..<5 { press(lap); release(lap) }     // ten edges, faster than anyone reads
        let all = try edges(line, count: 10)
        let alternating = all.enumerated().allSatisfy { $0.element.active == ($0.offset % 2 == 0) }
        let ordered = zip(all, all.dropFirst()).allSatisfy { $0.timestampNs <= $1.timestampNs }
        Checks.check(all.count == 10 && alternating && ordered, "ten fast bounces all queue, in order",
                     "\(all.count) edges: \(all.map { $0.active ? "v" : "^" }.joined())")
        // The kernel queues 16 edges per line (gpiolib-cdev); more are dropped before anyone
        // reads. GPIOInputLine.edgesPerReadMax is the same 16, so one read drains the queue.
        for _ in 0..<12 { press(lap); release(lap) }
        let many = try edges(line, count: 24)
        let manyAlternate = many.enumerated().allSatisfy { $0.element.active == ($0.offset % 2 == 0) }
        Checks.check(many.count == 16 && manyAlternate && GPIOInputLine.edgesPerReadMax == 16,
                     "24 fast edges: the kernel keeps 16 per line, as many as one read takes",
                     "\(many.count) edges, read size \(GPIOInputLine.edgesPerReadMax)")
    }

    func busyAndMissing() throws(GPIOError) {
        let holder = try GPIOInputLine(chip: chip, offset: page, activeLow: true, bias: .pullUp, consumer: "vm-holder")
        do {
            _ = try GPIOInputLine(chip: chip, offset: page, activeLow: true, bias: .pullUp)
            Checks.fail("a second request of a held line is refused", "it was granted")
        } catch {
            Checks.check(error == .lineBusy(chip: chip, offset: page, consumer: "vm-holder"),
                         "a second request of a held line is refused, naming the holder", "\(error)")
            Checks.check(error.description.contains("vm-holder") && error.description.contains("gpioinfo"),
                         "the busy message names the holder and says what to do", error.description)
        }
        _ = holder
        let beyond = lineCount + 3
        do {
            _ = try GPIOInputLine(chip: chip, offset: beyond, activeLow: true, bias: .pullUp)
            Checks.fail("a line beyond the chip is refused", "it was granted")
        } catch {
            Checks.check(error == .noSuchLine(chip: chip, offset: beyond, lineCount: lineCount),
                         "a line beyond the chip is reported with the chip's line count", "\(error)")
        }
        do {
            _ = try GPIOOutputLine(chip: "/dev/gpiochip97", offset: 1)
            Checks.fail("a missing chip is refused", "it was granted")
        } catch {
            Checks.check(error == .noSuchChip(path: "/dev/gpiochip97"), "a missing chip is reported as such", "\(error)")
        }
    }

    func outputs() throws(GPIOError) {
        let out = try GPIOOutputLine(chip: chip, offset: buzzer, initiallyActive: false, consumer: "vm-buzzer")
        Checks.check(level(buzzer) == "0", "an output starts at its initial (inactive) level", level(buzzer))
        try out.set(active: true)
        Checks.check(level(buzzer) == "1", "set(active: true) drives the line high", level(buzzer))
        try out.set(active: false)
        Checks.check(level(buzzer) == "0", "set(active: false) drives it low again", level(buzzer))
        let inverted = try GPIOOutputLine(chip: chip, offset: buzzer + 1, activeLow: true, initiallyActive: false, consumer: "vm-led")
        Checks.check(level(buzzer + 1) == "1", "an active-low output starts high (inactive)", level(buzzer + 1))
        try inverted.set(active: true)
        Checks.check(level(buzzer + 1) == "0", "an active-low output is low when active", level(buzzer + 1))
    }

    func buttonsOnTheEventLoop() throws(GPIOError) {
        let buttons = try GPIOButtons(chip: chip, offsets: [start, lap, page + 1], activeLow: true, bias: .pullUp)
        Checks.check(try buttons.currentLevels() == [false, false, false], "all buttons read released")
        let loop: EpollEventLoop
        do { loop = try EpollEventLoop() } catch {
            Checks.fail("an epoll loop", "\(error)")
            return
        }
        var seen: [(Int, Bool, UInt64)] = []
        do {
            try buttons.attach(to: loop) { index, active, ts in seen.append((index, active, ts)) }
        } catch {
            Checks.fail("the buttons register with the loop", "\(error)")
            return
        }
        press(lap)
        let deadline = MonotonicClock.nowNs + 3_000_000_000
        while seen.isEmpty && MonotonicClock.nowNs < deadline { try? loop.runOnce(maxWaitMs: 200) }
        release(lap)
        while seen.count < 2 && MonotonicClock.nowNs < deadline { try? loop.runOnce(maxWaitMs: 200) }
        Checks.check(seen.count == 2 && seen[0].0 == 1 && seen[0].1 && seen[1].0 == 1 && !seen[1].1,
                     "a press and release of the second button reach the loop as (1, pressed), (1, released)",
                     "\(seen.map { "(\($0.0), \($0.1))" })")
        Checks.check(buttons.readErrors == 0, "no read errors", "\(buttons.readErrors)")
        buttons.detach()
    }

    func otherBiases() throws(GPIOError) {
        // Pull-down bias with an active-high button (to 3V3).
        let five: UInt32 = 5
        setPull(five, "pull-up")
        let high = try GPIOInputLine(chip: chip, offset: five, activeLow: false, bias: .pullDown, consumer: "vm-check")
        Checks.check(pull(five) == "pull-down", "a pull-down request reaches the chip", pull(five))
        Checks.check(try !high.isActive(), "active-high: low reads as released")
        setPull(five, "pull-up")
        let e = try edges(high, count: 1)
        Checks.check(e.count == 1 && e[0].active, "active-high: going high is a press", "\(e)")
        // as-is leaves the chip's pull alone.
        let six: UInt32 = 6
        setPull(six, "pull-up")
        _ = try GPIOInputLine(chip: chip, offset: six, activeLow: true, bias: .asIs, consumer: "vm-check")
        Checks.check(pull(six) == "pull-up", "bias as-is leaves the line's pull alone", pull(six))
    }

    func notAChip() {
        do {
            _ = try GPIOInputLine(chip: "/dev/null", offset: 0, activeLow: false, bias: .asIs)
            Checks.fail("/dev/null is not taken for a GPIO chip", "it was accepted")
        } catch {
            Checks.check(error == .noSuchChip(path: "/dev/null"), "/dev/null is reported as no such chip", "\(error)")
        }
    }
}
