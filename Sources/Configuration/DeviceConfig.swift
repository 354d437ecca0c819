import RideModel

/// The device's settings, typed, with built-in defaults (the simulator needs no file). Loaded
/// from /etc/bikecomputer/config.toml on the board by `ConfigLoader.load(text:)`; docs/config.md
/// lists every key. Rider, zone and training values are plain numbers here; the runtime maps
/// them onto the Training types.
public struct DeviceConfig: Sendable, Hashable {
    public var buttons = Buttons()
    public var display = Display()
    public var bridge = Bridge()
    public var sensors: [Sensor] = []
    public var bike = Bike()
    public var rider = Rider()
    public var zones = Zones()
    public var training = Training()
    public var storage = Storage()
    public var control = Control()
    public var companion = Companion()
    public var gps = Gps()
    public var barometer = Barometer()
    public var battery = Battery()

    public init() {}

    /// The built-in defaults.
    public static let defaults = DeviceConfig()
    public static let defaultPath = "/etc/bikecomputer/config.toml"

    public struct Buttons: Sendable, Hashable {
        /// GPIO character device.
        public var chip = "/dev/gpiochip0"
        /// BCM line offsets: start/pause, lap and (optional) page, in that order.
        public var pins: [Int] = [17, 27, 22]
        public var activeLow = true
        public var bias: Bias = .pullUp
        public var longPressMs = 1_500
        public var debounceMs = 30
        /// Buzzer or LED output line (nil: none).
        public var buzzerPin: Int? = nil
        /// A power button's line (nil: none): held `powerOffHoldMs`, the unit powers off (docs/power.md).
        public var powerPin: Int? = nil
        public var powerOffHoldMs = 3_000

        public enum Bias: String, Sendable, Hashable, CaseIterable {
            case asIs = "as-is", pullUp = "pull-up", pullDown = "pull-down", disabled
        }
    }

    public struct Display: Sendable, Hashable {
        /// I²C bus number (/dev/i2c-N).
        public var bus = 1
        public var address = 0x3C
        public var type: Controller = .ssd1306
        public var height = 64
        public var contrast = 0x7F
        public var rotate180 = false
        /// SPI panels (the Sharp memory LCDs): /dev/spidev`spiBus`.`chipSelect`, the clock, and
        /// the EXTCOMIN line (a BCM line on [buttons] chip; nil: VCOM by command, EXTMODE low).
        public var spiBus = 0
        public var chipSelect = 0
        public var spiSpeedHz = 1_000_000
        public var extcominPin: Int? = nil

        public enum Controller: String, Sendable, Hashable, CaseIterable {
            case ssd1306, sh1106
            /// Sharp LS027B7DH01, 2.7" 400×240 memory LCD on SPI.
            case sharpLS027 = "sharp-ls027"
            /// Sharp LS013B7DH03, 1.28" 128×128 memory LCD on SPI.
            case sharpLS013 = "sharp-ls013"

            /// Whether the panel is on SPI (else an I²C OLED).
            public var isSPI: Bool { self == .sharpLS027 || self == .sharpLS013 }
        }
    }

    public struct Bridge: Sendable, Hashable {
        public var transport: Transport = .unix
        /// Unix socket path or serial device; nil: the transport's default.
        public var path: String? = nil
        public var baud = 115_200

        public enum Transport: String, Sendable, Hashable, CaseIterable { case unix, serial }

        public static let defaultSocketPath = "/run/bikecomputer/bridge.sock"
        public static let defaultSerialPath = "/dev/serial0"
        public var effectivePath: String { path ?? (transport == .unix ? Self.defaultSocketPath : Self.defaultSerialPath) }
    }

    /// A paired sensor (`[[sensor]]`).
    public struct Sensor: Sendable, Hashable {
        public var transport: Transport
        public var role: Role
        public var antDeviceNumber: Int? = nil
        public var antDeviceType: Int? = nil
        public var bleAddress: String? = nil
        public var name: String? = nil

        public init(transport: Transport, role: Role) {
            self.transport = transport
            self.role = role
        }

        public enum Transport: String, Sendable, Hashable, CaseIterable { case ant, ble }
        /// What the sensor is: the sensor vocabulary's kind (`role = "heart_rate"`, ...).
        public typealias Role = SensorKind
    }

    public struct Bike: Sendable, Hashable {
        public var wheelCircumferenceMm = 2_105
    }

    public struct Rider: Sendable, Hashable {
        public var age = 35
        public var restingHr = 60
        public var maxHr = 185
        /// Lactate threshold heart rate; nil: not known.
        public var lthr: Int? = nil
        public var ftpW = 200
    }

    public struct Zones: Sendable, Hashable {
        public var hrModel: HRModel = .maxHr
        /// Lower bounds (bpm) of HR zones 2...N, ascending; required for `explicit`.
        public var hrBoundaries: [Int] = []
        /// Lower bounds (W) of power zones 2...N, ascending; empty: derived from FTP.
        public var powerBoundaries: [Int] = []

        public enum HRModel: String, Sendable, Hashable, CaseIterable {
            case maxHr = "max_hr", hrr, lthr, explicit
        }
    }

    public struct Training: Sendable, Hashable {
        public var autoPause = true
        public var autoPauseSpeedKmh = 3.0
        public var autoLap = false
        public var autoLapDistanceM = 5_000
        /// Zero-averaging (docs/statistics.md): Garmin's defaults, cadence without zeros and
        /// power with zeros.
        public var averageCadenceZeros = false
        public var averagePowerZeros = true
    }

    public struct Storage: Sendable, Hashable {
        public var dataDir = "/var/lib/bikecomputer"
        public var fsyncIntervalMs = 1_000
    }

    public struct Control: Sendable, Hashable {
        public var socket = "/run/bikecomputer/control.sock"
    }

    public struct Companion: Sendable, Hashable {
        public var enabled = false
        public var listen = "127.0.0.1:8080"
    }
}
