import BoardHardware
import Configuration
import BoardIO
import Control
import Device
import Positioning
import RideModel
import Sensors

/// The barometer as the wiring reads it: `BarometerSensor` on the board, a double in tests.
public protocol BarometerUnit: AnyObject {
    /// The 24 calibration registers, read when it was opened.
    var calibration: [UInt8] { get }
    /// The 6 data registers now.
    func readData(into out: inout [UInt8]) throws(BarometerError)
}

extension BarometerSensor: BarometerUnit {}

/// The GPS: a gpsd client on the loop (docs/gps.md). Each line goes to the runtime as it
/// arrives; gpsd going away is the GPS going absent (the client reconnects by itself); the fix
/// rules' problems are logged as the receiver reports them (1st, 2nd, 4th, ... of a kind).
public final class GpsComponent: BoardComponent {
    let endpoint: GpsdEndpoint?
    let log: LogPort
    var client: GpsdClient?
    weak var board: BoardWiring?
    public private(set) var state: String
    public private(set) var hardwareErrors: UInt64 = 0

    public init(_ endpoint: GpsdEndpoint?, log: LogPort) {
        self.endpoint = endpoint
        self.log = log
        state = endpoint == nil ? "disabled ([gps] enabled = false)" : "starting"
    }

    public func start(_ board: BoardWiring) throws {
        guard let endpoint else { return }
        self.board = board
        let c = GpsdClient(endpoint: endpoint, loop: board.loop)
        c.onLine = { [unowned self] line, _ in self.input(.gpsdLine(line)) }
        c.onLineTooLong = { [unowned self] in self.input(.gpsdLineTooLong) }
        c.onConnect = { [unowned self] in
            self.state = "ok (gpsd at \(endpoint))"
            self.log.log(.info, "gps: connected to gpsd at \(endpoint)")
        }
        c.onDisconnect = { [unowned self] why in
            self.hardwareErrors &+= 1
            self.state = "waiting for gpsd: \(why)"
            self.log.log(.warning, "gps: \(why); retrying (is gpsd installed and gpsd.socket enabled? docs/gps.md)")
            self.input(.gpsdDisconnected)
        }
        client = c
        c.start()
    }

    func input(_ raw: RawSensorInput) {
        guard let board else { return }
        board.runtime.receive(raw, at: board.now)
        board.runtime.drainPositionProblems { [log] p, n in log.log(.warning, "gps: \(p) (\(n) so far)") }
        board.afterInputs()
    }

    public func writeStatus(into w: inout JSONWriter) {
        guard endpoint != nil, let board else { return }
        let p = board.runtime.positioning
        w.beginObject("gps")
        w.string("state", state)
        w.string("fix", p.gps.status.mode.description)
        w.int("satellites_used", p.gps.status.satellitesUsed.map(Int64.init))
        w.int("fixes", Int64(p.gps.counters.fixesAccepted))
        w.int("rejected", Int64(p.gps.counters.rejected))
        w.int("clock_rejected", Int64(p.gps.counters.clockRejectedByRule.reduce(0, +)))
        w.int("bad_reports", Int64(p.gps.counters.badReports))
        w.number("distance_m", p.gps.odometerM)
        w.number("odometer_m", board.runtime.odometerM)
        w.int("coalesced", Int64(p.fixesCoalesced))
        w.int("connects", client.map { Int64($0.counters.connects) })
        w.endObject()
    }

    public func close() {
        client?.close()
        client = nil
    }
}

/// The barometer: read once a second on a loop timer (normal mode: the sensor has a filtered
/// value ready, nothing waits), each reading handed to the runtime. Read errors are logged and
/// counted; the ride goes on (altitude then comes from GPS).
public final class BarometerComponent: BoardComponent {
    public static let periodMs: Int64 = 1_000
    let sensor: (any BarometerUnit)?
    let log: LogPort
    weak var board: BoardWiring?
    var timer: TimerID?
    var data = [UInt8](repeating: 0, count: 6)
    public let state: String
    public private(set) var hardwareErrors: UInt64
    public private(set) var readings: UInt64 = 0
    var lastErrorLogged: String?

    public init(_ sensor: (any BarometerUnit)?, state: String, errors: UInt64 = 0, log: LogPort) {
        self.sensor = sensor
        self.state = state
        hardwareErrors = errors
        self.log = log
    }

    public func start(_ board: BoardWiring) throws {
        guard let sensor else { return }
        self.board = board
        sensor.calibration.withUnsafeBytes { board.runtime.receive(.barometerCalibration($0), at: board.now) }
        timer = board.loop.scheduleRepeating("barometer", everyMs: Self.periodMs, read)
    }

    /// The timer's handler, made once (no closure allocated per reading).
    lazy var read: () -> Void = { [unowned self] in
        guard let sensor = self.sensor, let board = self.board else { return }
        do throws(BarometerError) {
            try sensor.readData(into: &self.data)
            self.readings &+= 1
            self.data.withUnsafeBytes { board.runtime.receive(.barometerData($0), at: board.now) }
            self.lastErrorLogged = nil
            board.afterInputs()
        } catch {
            self.hardwareErrors &+= 1
            let text = error.description
            if text != self.lastErrorLogged { self.log.log(.error, "barometer: \(text)"); self.lastErrorLogged = text }
        }
    }

    public func writeStatus(into w: inout JSONWriter) {
        guard sensor != nil, let board else { return }
        w.beginObject("barometer")
        w.string("state", state)
        w.int("readings", Int64(readings))
        w.number("altitude_m", board.runtime.positioning.altimetry.altitudeM, decimals: 1)
        w.number("calibration_offset_m", board.runtime.positioning.altimetry.calibrationOffsetM, decimals: 1)
        w.endObject()
    }

    public func close() {
        if let t = timer { board?.loop.cancelTimer(t) }
        timer = nil
    }
}

extension BoardDevices {
    /// gpsd's endpoint and the barometer as the config says: a barometer that does not answer is
    /// logged and left out (altitude then comes from GPS); an endpoint is only an address (the
    /// client connects, and reconnects, on the loop).
    static func openPositioning(config: DeviceConfig, into d: inout BoardDevices, log: LogPort) {
        if config.gps.enabled {
            d.gps = GpsdEndpoint(config.gps.gpsd)
            if d.gps == nil { log.log(.error, "gps: [gps] gpsd = \"\(config.gps.gpsd)\" is not host:port or a socket path; GPS off") }
        }
        guard config.barometer.enabled else { return }
        let path = "/dev/i2c-\(config.barometer.bus)"
        do {
            let s = try BarometerSensor(path: path, address: UInt8(config.barometer.address),
                                        controlMeasurement: BMP280.controlMeasurementValue, config: BMP280.configValue)
            d.barometer = s
            d.barometerState = "ok (\(s.chipID == 0x60 ? "BME280" : "BMP280") at \(path) 0x\(String(config.barometer.address, radix: 16)))"
            log.log(.info, "barometer: \(d.barometerState)")
        } catch {
            d.barometerErrors += 1
            d.barometerState = "failed: \(error)"
            log.log(.error, "barometer: \(error); altitude and climbing come from GPS")
        }
    }
}
