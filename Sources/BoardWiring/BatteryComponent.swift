import AppCore
import Battery
import BoardHardware
import BoardIO
import Control
import Device
import RideModel

/// A fuel gauge as the wiring reads it: `I2CRegisterDevice` on the board, a double in tests.
public protocol BatteryGaugeUnit: AnyObject {
    func readByte(_ register: UInt8) throws(I2CDeviceError) -> UInt8
    func readWordBigEndian(_ register: UInt8) throws(I2CDeviceError) -> UInt16
    func writeByte(_ register: UInt8, _ value: UInt8) throws(I2CDeviceError)
}

extension I2CRegisterDevice: BatteryGaugeUnit {}

/// The battery's fuel gauge on the loop (docs/power.md): read every `periodMs` on a timer (a few
/// SMBus transactions, well under a millisecond at 400 kHz; nothing waits for a conversion),
/// each reading decoded (`FuelGauge.decode`) and handed to the runtime, which decides what the
/// rider is told and when the unit powers off. A gauge that is missing, does not answer or is
/// not the chip configured is logged (once per message), counted, shown in `ctl status`, and
/// tried again every `reopenMs`: a battery board plugged in later is used then. The power-off,
/// once the core asks for it, is carried out at the next tick (`DeviceRuntime.powerOffIfDue`).
public final class BatteryComponent: BoardComponent {
    public static let periodMs: Int64 = 2_000
    public static let reopenMs: Int64 = 10_000

    public typealias Opener = () throws(I2CDeviceError) -> any BatteryGaugeUnit
    let settings: BatterySettings
    let where_: String
    let open: Opener?
    let log: LogPort
    weak var board: BoardWiring?
    var timer: TimerID?
    var device: (any BatteryGaugeUnit)?
    var values = [UInt16](repeating: 0, count: FuelGauge.registersMax)
    var nextOpenAtMs: Int64 = 0
    var lastLogged: String?
    public private(set) var state: String
    public private(set) var hardwareErrors: UInt64 = 0
    public private(set) var opens: UInt64 = 0
    public private(set) var readFailures: UInt64 = 0
    public private(set) var powerButtonRequestsCleared: UInt64 = 0

    /// - Parameters:
    ///   - where_: the bus and address, for messages ("/dev/i2c-1 0x36").
    ///   - open: opens the device (nil: no gauge configured).
    public init(settings: BatterySettings, where where_: String, open: Opener?, log: LogPort) {
        self.settings = settings
        self.where_ = where_
        self.open = open
        self.log = log
        state = open == nil ? "disabled ([battery] enabled = false)" : "starting"
    }

    public func start(_ board: BoardWiring) throws {
        guard open != nil else { return }
        self.board = board
        timer = board.loop.scheduleRepeating("battery", everyMs: Self.periodMs, read)
        read()
    }

    /// The timer's handler, made once (no closure allocated per reading).
    lazy var read: () -> Void = { [unowned self] in
        guard let board = self.board else { return }
        let reading = self.readGauge(nowMs: board.loop.nowMs)
        guard self.device != nil || reading != nil else { return } // not open yet: nothing to tell
        board.runtime.battery(reading, at: board.now)
        board.afterInputs()
    }

    /// One reading: opens (and probes) the gauge when it is not open, then reads its registers.
    /// nil when it could not be read.
    public func readGauge(nowMs: Int64) -> BatteryReading? {
        if device == nil {
            guard nowMs >= nextOpenAtMs, let open else { return nil }
            nextOpenAtMs = nowMs + Self.reopenMs
            do throws(I2CDeviceError) {
                let d = try open()
                let probe = try read(d, settings.gauge.probe)
                if let problem = settings.gauge.probeProblem(probe) {
                    fail("the chip at \(where_) is no \(settings.gauge): \(problem); check [battery] gauge and address")
                    return nil
                }
                device = d
                opens &+= 1
                state = "ok (\(settings.gauge) at \(where_))"
                lastLogged = nil
                log.log(.info, "battery: \(state)")
            } catch {
                fail("\(settings.gauge): \(error); retrying every \(Self.reopenMs / 1000) s")
                return nil
            }
        }
        guard let d = device else { return nil }
        do throws(I2CDeviceError) {
            let registers = settings.gauge.registers
            for (i, r) in registers.enumerated() { values[i] = try read(d, r) }
            let reading = values.withUnsafeBufferPointer { settings.gauge.decode($0, settings: settings) }
            if reading?.powerButtonRequest == true, settings.gauge == .pisugar3 { clearPowerButton(d) }
            if reading == nil { readFailures &+= 1 }
            return reading
        } catch {
            device = nil // reopened (and probed) at the next try: the board may have been replaced
            readFailures &+= 1
            fail("\(settings.gauge): \(error)")
            return nil
        }
    }

    func read(_ d: any BatteryGaugeUnit, _ r: FuelGauge.Register) throws(I2CDeviceError) -> UInt16 {
        switch r.width {
        case .byte: UInt16(try d.readByte(r.address))
        case .wordBigEndian: try d.readWordBigEndian(r.address)
        }
    }

    /// PiSugar 3: its power button's request is cleared at once (so the next boot does not take
    /// it for a new one); the runtime powers off.
    func clearPowerButton(_ d: any BatteryGaugeUnit) {
        do throws(I2CDeviceError) {
            for w in PiSugar3.clearPowerOffRequest(control2: UInt8(truncatingIfNeeded: values[1])) { try d.writeByte(w.register, w.value) }
            powerButtonRequestsCleared &+= 1
        } catch {
            fail("pisugar3: could not clear the power button's request: \(error)")
        }
    }

    func fail(_ message: String) {
        hardwareErrors &+= 1
        state = "failed: \(message)"
        if message != lastLogged {
            log.log(.error, "battery: \(message)")
            lastLogged = message
        }
    }

    public func writeStatus(into w: inout JSONWriter) {
        guard open != nil, let board else { return }
        let runtime = board.runtime
        let monitor = runtime.core.battery
        let r = monitor?.lastReading
        w.beginObject("battery")
        w.string("state", state)
        w.string("gauge", settings.gauge.rawValue)
        w.number("percent", monitor?.percent, decimals: 1)
        w.number("voltage_v", r?.voltageV, decimals: 3)
        w.number("current_ma", r?.currentA.map { $0 * 1000 }, decimals: 0)
        w.bool("external_power", r?.externalPower)
        w.bool("charging", monitor?.charging ?? false)
        w.number("drain_pct_per_h", monitor?.drainPercentPerHour, decimals: 2)
        w.int("time_left_min", monitor?.timeLeftMinutes.map(Int64.init))
        w.string("level", monitor?.level.description)
        w.int("readings", monitor.map { Int64(clamping: $0.readings) })
        w.int("rejected", monitor.map { Int64(clamping: $0.readingsRejected) })
        w.int("read_failures", Int64(clamping: readFailures))
        w.int("last_reading_ago_ms", monitor?.lastReadingAtMs.map { board.now.milliseconds + runtime.core.instantOffsetMs - $0 })
        w.string("power_off", runtime.powerOffReason?.description)
        w.bool("power_off_requested", runtime.powerOffRequested)
        w.string("power_off_problem", runtime.powerOffProblem)
        w.endObject()
    }

    public func close() {
        if let t = timer { board?.loop.cancelTimer(t) }
        timer = nil
        device = nil
    }
}

extension BoardWiring {
    /// Boot to ride-ready (docs/power.md): CLOCK_MONOTONIC ms since the kernel started, the
    /// scale `systemd-analyze` counts in, when the process started, its first screen was wholly
    /// on the panel, its buttons were in the loop and its control socket answered.
    func writeBootStamps(into w: inout JSONWriter) {
        w.beginObject("boot")
        w.int("process_start_ms", options.processStartMs)
        w.int("first_frame_ms", display.firstFrameAtMs)
        w.int("buttons_ready_ms", buttons.readyAtMs)
        w.int("wiring_start_ms", startMs)
        w.endObject()
    }
}
