import AppCore
import BoardHardware
import BoardIO
import Configuration
import Device
import Display
import Screens

/// The hardware a wiring uses, opened (or found missing) before it starts: the display, the
/// button lines and the buzzer line, each with the state `ctl status` shows and the errors met
/// opening it. `linux` opens the board's (libi2c, libgpiod); the tests make their own doubles.
public struct BoardDevices {
    public var display: (any DisplayUnit)?
    public var displayState: String
    public var buttons: (any ButtonLines)?
    public var buttonsState: String
    public var buttonsErrors: UInt64
    public var buzzer: (any AlertLine)?
    public var buzzerState: String
    public var buzzerErrors: UInt64
    /// gpsd's socket when `[gps] enabled` (docs/gps.md), and the barometer when `[barometer]`.
    public var gps: GpsdEndpoint? = nil
    public var barometer: (any BarometerUnit)? = nil
    public var barometerState = "disabled ([barometer] enabled = false)"
    public var barometerErrors: UInt64 = 0
    /// The battery's fuel gauge (`[battery]`): how to open it (nil: none configured) and where.
    public var batteryOpen: BatteryComponent.Opener? = nil
    public var batteryWhere = ""

    public init(display: (any DisplayUnit)? = nil, displayState: String = "disabled (--no-display)",
                buttons: (any ButtonLines)? = nil, buttonsState: String = "disabled (--no-buttons)", buttonsErrors: UInt64 = 0,
                buzzer: (any AlertLine)? = nil, buzzerState: String = "none", buzzerErrors: UInt64 = 0) {
        self.display = display
        self.displayState = displayState
        self.buttons = buttons
        self.buttonsState = buttonsState
        self.buttonsErrors = buttonsErrors
        self.buzzer = buzzer
        self.buzzerState = buzzerState
        self.buzzerErrors = buzzerErrors
    }

    /// The board's hardware as the config describes it. The I²C display is opened at its first
    /// write and retried every few seconds while it does not answer (a loose connector at
    /// power-on); buttons and the buzzer that cannot be requested are logged, counted and left
    /// out — the ride goes on without them. With `latencyProbeHz` the display is the latency
    /// probe (measurement mode: an emulated bus at that clock, 0 for none).
    public static func linux(config: DeviceConfig, settings: DeviceSettings, display: Bool, buttons: Bool,
                             latencyProbeHz: Int?, log: LogPort) -> BoardDevices {
        var d = BoardDevices()
        if let hz = latencyProbeHz, let lcd = settings.memoryLCD {
            // The memory LCD's pipeline on a probe link: hz is the SPI clock (0: no delay).
            let link = SPIDisplayLink(port: LatencyProbeSPI(emulatedClockHz: hz, nowNs: { MonotonicClock.nowNs }))
            d.display = LatencyProbeLCD(bus: link, pipeline: PanelPipeline(driver: lcd.driver()))
            d.displayState = "emulated \(lcd.name) (measurement mode, \(hz) Hz)"
        } else if let hz = latencyProbeHz {
            d.display = DisplayScreen(bus: LatencyProbeBus(emulatedClockHz: hz, nowNs: { MonotonicClock.nowNs }), panel: settings.panel)
            d.displayState = "emulated (measurement mode, \(hz) Hz)"
        } else if display, let lcd = settings.memoryLCD {
            openMemoryLCD(lcd, into: &d, log: log)
        } else if display {
            let bus = I2CBus(deferredPath: "/dev/i2c-\(config.display.bus)", address: UInt8(config.display.address))
            d.display = DisplayScreen(bus: bus, panel: settings.panel)
            d.displayState = "ok (/dev/i2c-\(config.display.bus) 0x\(String(config.display.address, radix: 16)))"
        }
        openPositioning(config: config, into: &d, log: log)
        if config.battery.enabled {
            let path = "/dev/i2c-\(config.battery.bus)", address = UInt8(config.battery.effectiveAddress)
            d.batteryWhere = "\(path) 0x\(String(address, radix: 16))"
            d.batteryOpen = { () throws(I2CDeviceError) -> any BatteryGaugeUnit in try I2CRegisterDevice(path: path, address: address) }
        }
        guard buttons else { return d }
        let c = config.buttons
        if let pin = c.buzzerPin {
            do {
                d.buzzer = try GPIOOutputLine(chip: c.chip, offset: UInt32(pin))
                d.buzzerState = "ok (\(c.chip) line \(pin))"
            } catch {
                d.buzzerErrors += 1
                d.buzzerState = "failed: \(error)"
                log.log(.error, "buzzer: \(error); alerts are shown but not sounded")
            }
        }
        let bias: GPIOBias
        switch c.bias {
        case .asIs: bias = .asIs
        case .pullUp: bias = .pullUp
        case .pullDown: bias = .pullDown
        case .disabled: bias = .disabled
        }
        let lines = settings.buttonLines
        do {
            d.buttons = try GPIOButtons(chip: c.chip, offsets: lines.map(\.offset), activeLow: c.activeLow, bias: bias)
            d.buttonsState = "ok (\(c.chip) lines \(lines.map { String($0.offset) }.joined(separator: ",")))"
            log.log(.info, "buttons: \(d.buttonsState)")
        } catch {
            d.buttonsErrors += 1
            d.buttonsState = "failed: \(error)"
            log.log(.error, "buttons: \(error); running without the buttons (use `bikecomputer ctl` to control the ride)")
        }
        return d
    }
}

extension BoardDevices {
    /// A Sharp memory LCD on spidev (opened at its first write and retried like the OLED), with
    /// its EXTCOMIN line when one is configured. A configured EXTCOMIN line that cannot be
    /// requested is an error in the log and the display's state: with EXTMODE high nothing else
    /// alternates the panel's VCOM.
    static func openMemoryLCD(_ lcd: MemoryLCDSettings, into d: inout BoardDevices, log: LogPort) {
        let port = SPIDevice(deferredPath: lcd.devicePath, mode: .sharpMemoryLCD, speedHz: lcd.speedHz)
        let screen = PanelScreen(bus: SPIDisplayLink(port: port), pipeline: PanelPipeline(driver: lcd.driver()))
        var vcom = "VCOM by command"
        if let pin = lcd.extcominPin {
            do {
                let line = try GPIOOutputLine(chip: lcd.gpioChip, offset: pin)
                screen.dutyPin = { level in
                    do { try line.set(active: level); return true } catch { return false }
                }
                vcom = "VCOM on EXTCOMIN \(lcd.gpioChip) line \(pin)"
            } catch {
                vcom = "EXTCOMIN \(lcd.gpioChip) line \(pin) FAILED: \(error)"
                log.log(.error, "display: the EXTCOMIN line \(pin) on \(lcd.gpioChip) cannot be driven: \(error); with EXTMODE wired high the panel's VCOM does not alternate: free the line or wire EXTMODE low and remove extcomin_pin")
            }
        }
        d.display = screen
        d.displayState = "ok (\(lcd.name) \(lcd.model.width)x\(lcd.model.height) on \(lcd.devicePath) at \(lcd.speedHz) Hz, \(lcd.linesPerStep) lines per step, \(vcom))"
    }
}

// libgpiod's lines, as the wiring uses them (their typed-throws methods satisfy the protocols).
extension GPIOButtons: ButtonLines {}
extension GPIOOutputLine: AlertLine {}
