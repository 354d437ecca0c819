import ArgumentParser
import BoardHardware
import BoardIO
import Control
import Glibc
import Positioning
import RideModel

/// `bikecomputer gps`: follows gpsd the way the ride does (the same client, parser and fix
/// rules) and prints one JSON object per fix, status change and problem; `--parse` parses gpsd
/// report lines from standard input instead.
struct GpsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gps",
        abstract: "Check the GPS: follow gpsd and print each fix, status change and problem as JSON.",
        discussion: """
            Connects to gpsd (Debian's gpsd.socket listens on 127.0.0.1:2947), asks for JSON reports \
            and applies the ride's fix rules (docs/gps.md). Ends after --seconds or --fixes, or on \
            Ctrl-C, with a summary line: fixes, rejected fixes by rule, bad reports, GPS distance.
              bikecomputer gps                       (until Ctrl-C)
              bikecomputer gps --seconds 30
              bikecomputer gps --parse < reports.json   (parse gpsd JSON lines, no gpsd needed)
            """)

    @Option(name: .customLong("gpsd"), help: "gpsd's socket: HOST:PORT or a Unix socket path.")
    var gpsd: String = GpsdEndpoint.debianDefault.description

    @Option(name: .customLong("seconds"), help: "Stop after this many seconds.")
    var seconds: Int?

    @Option(name: .customLong("fixes"), help: "Stop after this many accepted fixes.")
    var fixesMax: Int?

    @Flag(name: .customLong("quiet"), help: "Print only the summary line.")
    var quiet = false

    @Flag(name: .customLong("parse"), help: "Parse gpsd JSON report lines from standard input and print what the app reads of each.")
    var parse = false

    func validate() throws {
        if GpsdEndpoint(gpsd) == nil { throw ValidationError("--gpsd \(gpsd): give HOST:PORT (e.g. 127.0.0.1:2947) or a socket path (e.g. /run/gpsd.sock)") }
        if let s = seconds, s <= 0 { throw ValidationError("--seconds must be positive") }
    }

    func run() throws {
        if parse { return parseStandardInput() }
        let loop = try EpollEventLoop()
        let client = GpsdClient(endpoint: GpsdEndpoint(gpsd)!, loop: loop)
        var receiver = GpsReceiver()
        var altimetry = Altimetry()
        var fixes = 0
        let start = loop.nowMs
        let quiet = quiet
        func show(_ o: GpsOutput) {
            if case .fix(let f) = o {
                fixes += 1
                if let a = f.altitudeM { altimetry.gps(altitudeM: a, verticalErrorM: f.verticalErrorM, at: f.instant) { _ in } }
            }
            guard !quiet, let line = Self.json(o, altimetry: altimetry) else { return }
            emitLine(line)
        }
        client.onLine = { line, nowMs in
            receiver.receive(line: line, at: MonotonicInstant(milliseconds: nowMs - start), show)
            if let m = fixesMax, fixes >= m { loop.stop() }
        }
        client.onLineTooLong = { receiver.lineTooLong(show) }
        client.onConnect = { if !quiet { emitLine(#"{"event":"connected","gpsd":\#(JSONWriter.quote(gpsd))}"#) } }
        client.onDisconnect = { why in
            if !quiet { emitLine(#"{"event":"disconnected","reason":\#(JSONWriter.quote(why))}"#) }
            receiver.disconnected(at: MonotonicInstant(milliseconds: loop.nowMs - start), show)
        }
        loop.scheduleRepeating("gps.tick", everyMs: 1000) { receiver.tick(at: MonotonicInstant(milliseconds: loop.nowMs - start), show) }
        if let s = seconds { loop.scheduleTimer("gps.end", afterMs: Int64(s) * 1000) { loop.stop() } }
        try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
        client.start()
        try loop.run()
        client.close()
        emitLine(Self.summary(receiver, client: client, altimetry: altimetry))
    }

    static func json(_ o: GpsOutput, altimetry: Altimetry) -> String? {
        var j = JSONWriter(pretty: false)
        j.beginObject()
        switch o {
        case .fix(let f):
            j.string("event", "fix")
            j.number("t_s", Double(f.instant.milliseconds) / 1000)
            j.string("time", UTCDateTime(unixMs: f.timeUnixMs).iso8601)
            j.int("time_ms", f.timeUnixMs)
            j.string("mode", f.mode.description)
            j.number("lat", f.latitudeDeg, decimals: 9)
            j.number("lon", f.longitudeDeg, decimals: 9)
            j.number("speed_mps", f.speedMps)
            j.number("alt_m", f.altitudeM)
            j.number("eph_m", f.horizontalErrorM)
            j.number("epv_m", f.verticalErrorM)
            j.number("distance_m", f.odometerM)
            j.number("ascent_m", altimetry.ascentM, decimals: 1)
        case .status(let s, let at):
            j.string("event", "status")
            j.number("t_s", Double(at.milliseconds) / 1000)
            j.string("mode", s.mode.description)
            j.int("satellites_used", s.satellitesUsed.map(Int64.init))
            j.int("satellites_visible", s.satellitesVisible.map(Int64.init))
        case .time:
            return nil
        case .problem(let p, let n):
            j.string("event", "problem")
            j.string("problem", p.description)
            j.int("count", Int64(n))
        }
        j.endObject()
        return j.text
    }

    static func summary(_ r: GpsReceiver, client: GpsdClient, altimetry: Altimetry) -> String {
        var j = JSONWriter(pretty: false)
        j.beginObject()
        j.string("event", "summary")
        j.int("lines", Int64(r.counters.lines))
        j.int("fixes", Int64(r.counters.fixesAccepted))
        j.int("no_fix_reports", Int64(r.counters.noFixReports))
        j.beginObject("rejected")
        for rule in GpsFixRejection.allCases { j.int(rule.description, Int64(r.counters.rejectedByRule[Int(rule.rawValue)])) }
        j.endObject()
        j.int("clock_times", Int64(r.counters.clockTimes))
        j.beginObject("clock_rejected")
        for rule in GpsClockRejection.allCases { j.int(rule.description, Int64(r.counters.clockRejectedByRule[Int(rule.rawValue)])) }
        j.endObject()
        j.int("bad_reports", Int64(r.counters.badReports))
        j.int("ignored_reports", Int64(r.counters.reportsByClass[Int(GpsdReportClass.other.rawValue)]))
        j.int("lines_too_long", Int64(client.counters.linesTooLong))
        j.int("position_restarts", Int64(r.counters.positionRestarts))
        j.int("fixes_lost", Int64(r.counters.fixesLost))
        j.int("connects", Int64(client.counters.connects))
        j.int("disconnects", Int64(client.counters.disconnects))
        j.number("distance_m", r.odometerM)
        j.number("ascent_m", altimetry.ascentM, decimals: 1)
        j.number("descent_m", altimetry.descentM, decimals: 1)
        j.string("mode", r.status.mode.description)
        j.endObject()
        return j.text
    }

    /// One JSON object per input line: the fields the app reads, or the error.
    func parseStandardInput() {
        var bad = 0
        while var text = readLine(strippingNewline: true) {
            var j = JSONWriter(pretty: false)
            j.beginObject()
            let result = text.withUTF8 { p -> Result<GpsdReport, GpsdReportError> in
                do throws(GpsdReportError) { return .success(try GpsdReport.parse(UnsafeRawBufferPointer(p))) } catch { return .failure(error) }
            }
            switch result {
            case .success(let r):
                j.string("class", r.reportClass.description)
                if r.reportClass == .tpv {
                    j.int("mode", Int64(r.mode))
                    j.int("time_ms", r.timeUnixMs)
                    j.number("lat", r.latitudeDeg, decimals: 9)
                    j.number("lon", r.longitudeDeg, decimals: 9)
                    j.number("alt_msl", r.altitudeMSLM, decimals: 4)
                    j.number("speed", r.speedMps, decimals: 4)
                    j.number("track", r.trackDeg, decimals: 4)
                    j.number("eph", r.horizontalErrorM, decimals: 4)
                    j.number("epv", r.verticalErrorM, decimals: 4)
                }
                if r.reportClass == .sky {
                    j.int("satellites_used", r.satellitesUsed.map(Int64.init))
                    j.int("satellites_visible", r.satellitesVisible.map(Int64.init))
                }
            case .failure(let e):
                bad += 1
                j.string("error", e.description)
            }
            j.endObject()
            emitLine(j.text)
        }
        if bad > 0 { warnLine("bikecomputer gps --parse: \(bad) line(s) were not reports") }
    }
}

/// One line to standard output at once (not buffered: a test or a pipe sees each as it comes).
func emitLine(_ line: String) {
    try? FileDescriptor(rawValue: 1).writeAll(Array((line + "\n").utf8))
}

func warnLine(_ line: String) {
    try? FileDescriptor(rawValue: 2).writeAll(Array((line + "\n").utf8))
}

/// `bikecomputer barometer`: reads a BMP280/BME280 the way the ride does and prints each reading.
struct BarometerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "barometer",
        abstract: "Check the barometer (BMP280/BME280 on I2C): print its chip id and readings as JSON.")

    @Option(name: .customLong("bus"), help: "The I2C bus device.")
    var bus = "/dev/i2c-1"

    @Option(name: .customLong("address"), help: "The sensor's address: 0x76 (SDO to GND) or 0x77.")
    var address = "0x76"

    @Option(name: .customLong("count"), help: "Readings to take, one a second.")
    var count = 5

    @Option(name: .customLong("interval-ms"), help: "Time between readings.")
    var intervalMs = 1000

    var addressValue: UInt8? {
        let t = address.lowercased()
        return t.hasPrefix("0x") ? UInt8(t.dropFirst(2), radix: 16) : UInt8(t)
    }

    func validate() throws {
        guard addressValue != nil else { throw ValidationError("--address \(address): give 0x76 or 0x77") }
        if count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let sensor: BarometerSensor
        do {
            sensor = try BarometerSensor(path: bus, address: addressValue!, controlMeasurement: BMP280.controlMeasurementValue,
                                         config: BMP280.configValue)
        } catch {
            warnLine("bikecomputer barometer: \(error)")
            throw ExitCode(1)
        }
        guard let calibration = BMP280.Calibration(bytes: sensor.calibration) else {
            warnLine("bikecomputer barometer: the calibration registers are not valid")
            throw ExitCode(1)
        }
        var data = [UInt8](repeating: 0, count: BarometerSensor.dataBytes)
        for k in 0..<count {
            if k > 0 { usleep(UInt32(intervalMs) * 1000) }
            var j = JSONWriter(pretty: false)
            j.beginObject()
            j.string("chip", sensor.chipID == 0x60 ? "BME280" : "BMP280")
            j.string("chip_id", "0x" + String(sensor.chipID, radix: 16))
            do {
                try sensor.readData(into: &data)
                if let raw = BMP280.Raw(bytes: data), let r = BMP280.compensate(raw, calibration) {
                    j.int("adc_p", Int64(raw.pressure))
                    j.int("adc_t", Int64(raw.temperature))
                    j.int("t_fine", Int64(r.tFine))
                    j.number("temperature_c", r.temperatureC, decimals: 2)
                    j.number("pressure_pa", r.pressurePa, decimals: 2)
                    j.number("altitude_m", PressureAltitude.altitudeM(pressurePa: r.pressurePa), decimals: 2)
                } else {
                    j.string("error", "no measurement yet (raw 0x80000) or a reading the calibration cannot compensate")
                }
            } catch {
                j.string("error", error.description)
            }
            j.endObject()
            emitLine(j.text)
        }
    }
}
