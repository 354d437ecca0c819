import AppCore
import BoardHardware
import BoardIO
import BoardWiring
import Configuration
import Device
import Foundation
import Glibc
import Journal
import RideModel
import Testing

/// The barometer's registers as the board's driver would read them (the datasheet's example
/// calibration, and the data registers the test sets).
final class FakeBarometer: BarometerUnit {
    let calibration: [UInt8] = [0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B,
                                0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17]
    var data: [UInt8] = [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00]
    var failing = false
    var reads = 0
    func readData(into out: inout [UInt8]) throws(BarometerError) {
        reads += 1
        if failing { throw .noDevice(path: "/dev/i2c-1", address: 0x76) }
        for i in 0..<6 { out[i] = data[i] }
    }
}

/// gpsd as the wiring sees it: a listening Unix stream socket the test accepts on and writes
/// report lines to.
final class FakeGpsdSocket {
    let path: String
    let listener: Int32
    var connection: Int32 = -1

    init(path: String) {
        self.path = path
        unlink(path)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        _ = withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            path.utf8CString.withUnsafeBytes { src in memcpy(raw.baseAddress!, src.baseAddress!, min(src.count, raw.count - 1)) }
        }
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        listen(listener, 4)
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        if connection >= 0 { close(connection) }
        close(listener)
        unlink(path)
    }

    /// Accepts a waiting client; returns what it sent first (the WATCH command), nil if none waits.
    func accept() -> String? {
        let c = Glibc.accept(listener, nil, nil)
        guard c >= 0 else { return nil }
        if connection >= 0 { close(connection) }
        connection = c
        var buf = [UInt8](repeating: 0, count: 256)
        let n = buf.withUnsafeMutableBytes { Glibc.read(c, $0.baseAddress, $0.count) }
        return n > 0 ? String(decoding: buf[0..<n], as: UTF8.self) : ""
    }

    func send(_ line: String) {
        let bytes = Array((line + "\r\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// gpsd goes away.
    func drop() {
        close(connection)
        connection = -1
    }
}

/// `bikecomputer run`'s wiring in process with `[gps]` and `[barometer]` on: the gpsd client on
/// the loop against a socket, the barometer read on its timer, both reaching the ride.
@Suite(.serialized) struct PositionWiringTests {
    final class PositionRig {
        let loop = ManualEventLoop(startMs: 10_000)
        let dir: String
        let memory = MemoryLog(capacity: 1024)
        let gpsd: FakeGpsdSocket
        let barometer = FakeBarometer()
        let wiring: BoardWiring

        init() throws {
            dir = "/tmp/gps-wiring-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            gpsd = FakeGpsdSocket(path: dir + "/gpsd.sock")
            var config = DeviceConfig()
            config.control.socket = dir + "/control.sock"
            config.bridge.path = dir + "/bridge.sock"
            config.gps.enabled = true
            config.gps.gpsd = gpsd.path
            config.barometer.enabled = true
            config.training.autoPause = false
            let settings = try ConfigMapping.settings(config, dataDirectory: dir + "/data")
            var devices = BoardDevices()
            devices.gps = GpsdEndpoint(config.gps.gpsd)
            devices.barometer = barometer
            devices.barometerState = "ok (test registers)"
            var options = BoardWiring.Options()
            options.wallClock = { WallClockTime(unixMs: 1_790_000_000_000, trusted: true) }
            let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 5, deviceNow: MonotonicInstant(milliseconds: loop.nowMs))
            wiring = try BoardWiring(loop: loop, opened: opened, archive: KeptArchive(), settings: settings, devices: devices,
                                     options: options, log: CountingLog(memory))
        }

        deinit {
            wiring.close()
            try? FileManager.default.removeItem(atPath: dir)
        }

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
            return try #require(JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
        }

        static func tpv(_ s: Int, northM: Double) -> String {
            let lat = 46 + northM / 111_200
            return #"{"class":"TPV","mode":3,"time":"2026-09-21T10:00:\#(s < 10 ? "0" : "")\#(s).000Z","lat":\#(lat),"lon":7.0,"altMSL":500.0,"speed":6.0,"eph":8,"epv":12}"#
        }
    }

    @Test func gpsdAndTheBarometerReachTheRideAndGpsdRestartsAreSurvived() throws {
        let rig = try PositionRig()
        rig.run(ms: 100)
        let watch = try #require(rig.gpsd.accept(), "the client connects at start")
        #expect(watch == "?WATCH={\"enable\":true,\"json\":true};\n")
        #expect(rig.wiring.controlLine("start").line.hasPrefix("ok"))
        rig.gpsd.send(#"{"class":"SKY","nSat":11,"uSat":8}"#)
        for s in 0..<20 {
            rig.gpsd.send(PositionRig.tpv(s, northM: Double(s) * 6))
            rig.run(ms: 1_000)
        }
        let core = rig.wiring.runtime.core
        #expect(core.state == .running)
        #expect(core.screen.gps == GpsStatus(mode: .fix3D, satellitesUsed: 8, satellitesVisible: 11))
        #expect(core.screen.sensor(.gps) == .connected)
        #expect(core.screen.track.count > 10)
        #expect(core.screen[.altitude] != nil, "the barometer's altitude")
        #expect(rig.barometer.reads >= 19, "read once a second")
        let status = try rig.status()
        let gps = try #require(status["gps"] as? [String: Any])
        #expect(gps["fix"] as? String == "3D" && (gps["fixes"] as? Int ?? 0) >= 19)
        let baro = try #require(status["barometer"] as? [String: Any])
        #expect((baro["readings"] as? Int ?? 0) >= 19)
        // Calibrated from the GPS fixes: the GPS altitude (500 m), not the standard atmosphere's 56 m.
        #expect(abs((baro["altitude_m"] as? Double ?? 0) - 500) < 1)

        // gpsd goes away: the GPS is absent and lost at once (alerted), the client retries and
        // takes the new gpsd's reports.
        rig.gpsd.drop()
        rig.run(ms: 200)
        #expect(rig.wiring.runtime.core.screen.gps.mode == .absent)
        #expect(rig.wiring.runtime.core.screen.sensor(.gps) == .lost)
        #expect(rig.memory.lines.elements.contains { $0.contains("gps: gpsd at") && $0.contains("closed the connection") })
        rig.run(ms: 1_000)
        #expect(rig.gpsd.accept() != nil, "reconnected within a second")
        for s in 20..<25 {
            rig.gpsd.send(PositionRig.tpv(s, northM: Double(s) * 6))
            rig.run(ms: 1_000)
        }
        #expect(rig.wiring.runtime.core.screen.sensor(.gps) == .connected)
        #expect((try rig.status()["gps"] as? [String: Any])?["connects"] as? Int == 2)
    }

    /// Garbage from gpsd and a barometer that stops answering: logged and counted, the ride goes on.
    @Test func garbageAndAFailingBarometerAreLoggedNotFatal() throws {
        let rig = try PositionRig()
        rig.run(ms: 100)
        _ = rig.gpsd.accept()
        #expect(rig.wiring.controlLine("start").line.hasPrefix("ok"))
        rig.gpsd.send(#"{"class":"TPV","mode":3,"lat":"#)
        rig.gpsd.send("garbage")
        rig.barometer.failing = true
        rig.run(ms: 5_000)
        let lines = rig.memory.lines.elements
        #expect(lines.contains { $0.contains("gps: bad report from gpsd: truncated JSON (1 so far)") })
        #expect(lines.contains { $0.contains("gps: bad report from gpsd: not a JSON object (1 so far)") })
        #expect(lines.filter { $0.contains("barometer: no barometer answers") }.count == 1, "logged once, not every second")
        #expect(rig.wiring.runtime.core.state == .running)
        let status = try rig.status()
        #expect(((status["gps"] as? [String: Any])?["bad_reports"] as? Int) == 2)
    }
}
