import Testing
import Glibc
import AppCore
import BoardIO
import Device
import Journal
import RideModel
import Sensors

/// A bridge writes protocol frames to the app's Unix SOCK_SEQPACKET socket and to a pseudo-terminal
/// (standing in for a serial dongle); the bytes go to the device runtime's one input path
/// (`DeviceRuntime.receive`, as on the board), which parses, decodes, runs the data source and
/// feeds the app core, whose screen shows the values. Bridge death shows the sensors as lost; a
/// reconnect restores them.
@Suite(.serialized) struct SensorInputPathTests {
    static let hrm = SourceIdentity.ant(deviceNumber: 4321, deviceType: 120, transmissionType: 1)
    static let pm = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)

    static func configuration() -> DataSourceConfiguration {
        DataSourceConfiguration(sensors: [
            PairedSensor(hrm),
            PairedSensor(pm, provides: QuantitySet(.power, .cadence, .speed, .distance, .pedalBalanceRight)),
        ])
    }

    /// The bridge's frames for step `k`: an HRM page at 72 + k bpm and a CPS value at 200 + k W with
    /// a crank event every 0.5 s (120 rpm).
    static func frames(step k: Int) -> [BridgeFrame] {
        var hr = LE()
        hr.u8(UInt8(k % 2 == 0 ? 0x00 : 0x80)); hr.u8(0xFF); hr.u8(0); hr.u8(0)
        hr.u16(UInt16(k * 512)); hr.u8(UInt8(k & 0xFF)); hr.u8(UInt8(72 + k))
        var cps = LE()
        cps.u16(0x20); cps.s16(Int16(200 + k)); cps.u16(UInt16(k)); cps.u16(UInt16(k * 512))
        let t = UInt64(k) * 250_000
        return [
            BridgeFrame(bridgeTimeUs: t, .data(hrm, profileCode: 120, payload(hr.bytes))),
            BridgeFrame(bridgeTimeUs: t, .data(pm, profileCode: 0x2A63, payload(cps.bytes))),
        ]
    }

    /// The app side of the socket transport: drains packets without blocking.
    struct SocketReceiver {
        var connection: SeqPacketConnection?
        var buffer = [UInt8](repeating: 0, count: FrameBytes.capacity)

        /// Returns false when the bridge closed the connection.
        mutating func drain(_ device: DeviceRuntime, at now: MonotonicInstant) throws -> Bool {
            guard let c = connection else { return false }
            while true {
                let r = try buffer.withUnsafeMutableBytes { try c.receive(into: $0) }
                switch r {
                case .wouldBlock: return true
                case .closed:
                    c.close()
                    connection = nil
                    device.bridgeDisconnected(at: now)
                    return false
                case let .data(n, truncated):
                    buffer.withUnsafeBytes { device.receive(.bridgePacket(UnsafeRawBufferPointer(rebasing: $0[0..<n]), truncated: truncated), at: now) }
                }
            }
        }
    }

    @Test func unixSocketBridgeFeedsAppCoreAndSurvivesDeath() throws {
        let path = "/tmp/bikecomputer-sensors-test-\(getpid()).sock"
        let listener = try SeqPacketListener.listen(path: path)
        defer { listener.close() }
        let device = Self.device(seed: 7)
        var app: AppCore { device.core }
        #expect(app.screen.sensor(.heartRate) == .searching)
        #expect(try listener.accept() == nil)

        var bridge = try SeqPacketConnection.connect(path: path)
        var rx = SocketReceiver(connection: try listener.accept())
        #expect(rx.connection != nil)
        device.bridgeConnected(at: ms(0))
        try bridge.send(BridgeFrame(bridgeTimeUs: 0, .hello(protocolVersionMax: 1, radios: 3, bridgeID: 1)).encoded().bytes)
        var now: Int64 = 0
        for k in 0..<8 {
            now = Int64(k) * 250
            for f in Self.frames(step: k) { try bridge.send(f.encoded().bytes) }
            try bridge.send([0x09, 0x09])  // a garbage packet: counted, skipped
            #expect(try rx.drain(device, at: ms(now)))
        }
        #expect(app.screen[.heartRate] == 79)
        #expect(app.screen[.power] == 207)
        #expect(app.screen[.cadence] == 120)
        #expect(app.screen.sensor(.heartRate) == .connected)
        #expect(app.screen.sensor(.power) == .connected)
        #expect(app.screen.sensor(.cadence) == .connected)
        #expect(device.sensorStatus.bad[.malformedFrame] == 8)
        #expect(device.sensorStatus.logLine.contains("malformed_frame 8"))

        // The bridge dies.
        bridge.close()
        now += 100
        #expect(try rx.drain(device, at: ms(now)) == false)
        #expect(app.screen.sensor(.heartRate) == .lost)
        #expect(app.screen.sensor(.power) == .lost)
        device.coreTick(at: ms(now + 4000))
        #expect(app.screen[.heartRate] == nil)
        #expect(app.screen[.power] == nil)

        // It comes back.
        bridge = try SeqPacketConnection.connect(path: path)
        defer { bridge.close() }
        rx.connection = try listener.accept()
        now += 5000
        for k in 20..<24 {
            for f in Self.frames(step: k) { try bridge.send(f.encoded().bytes) }
            #expect(try rx.drain(device, at: ms(now + Int64(k - 20) * 250)))
        }
        #expect(app.screen.sensor(.heartRate) == .connected)
        #expect(app.screen.sensor(.power) == .connected)
        #expect(app.screen[.heartRate] == 95)
        #expect(app.screen[.power] == 223)
        #expect(app.screen[.cadence] == 120)
    }

    @Test func serialBridgeOnPseudoTerminalFeedsAppCoreAndSurvivesSilence() throws {
        let pty = try PseudoTerminal.open()
        defer { pty.controller.close() }
        let port = try SerialPort.open(pty.terminalPath, baud: 115200)
        defer { port.close() }
        let device = Self.device(seed: 9)
        var app: AppCore { device.core }
        device.bridgeConnected(at: ms(0))
        var buffer = [UInt8](repeating: 0, count: 256)

        func pump(at now: Int64) throws {
            // The pty may deliver what the bridge wrote in pieces: read until nothing is left.
            var idle = 0
            while idle < 3 {
                let r = try buffer.withUnsafeMutableBytes { try port.read(into: $0) }
                switch r {
                case let .data(n, _):
                    idle = 0
                    buffer.withUnsafeBytes { device.receive(.serialBytes(UnsafeRawBufferPointer(rebasing: $0[0..<n])), at: ms(now)) }
                case .wouldBlock:
                    idle += 1
                    usleep(2_000)
                case .closed:
                    return
                }
            }
        }

        func write(_ bytes: [UInt8]) throws { try pty.controller.writeAll(bytes) }

        try write([0x13, 0x37, 0xFF])  // line noise (a dongle booting)
        try write([0x00])  // a bridge starts with a delimiter, so its first frame is not glued to noise
        try write(SerialFraming.encode(BridgeFrame(bridgeTimeUs: 0, .hello(protocolVersionMax: 1, radios: 2, bridgeID: 5))).bytes)
        var now: Int64 = 0
        for k in 0..<8 {
            now = Int64(k) * 250
            for f in Self.frames(step: k) { try write(SerialFraming.encode(f).bytes) }
            if k == 3 { try write([0x42, 0x42, 0x00]) }
            try pump(at: now)
        }
        #expect(app.screen[.heartRate] == 79)
        #expect(app.screen[.power] == 207)
        #expect(app.screen.sensor(.heartRate) == .connected)
        #expect(device.sensorStatus.framesReceived == 17)
        #expect(device.sensorStatus.bad.total >= 2)
        #expect(device.sensorStatus.bad[.serialChecksum] + device.sensorStatus.bad[.serialEncoding] >= 2)

        // The dongle goes silent: after the bridge-silence time the sensors are lost.
        device.tick(at: ms(now + 5_000))
        #expect(app.screen.sensor(.heartRate) == .lost)
        #expect(app.screen.sensor(.power) == .lost)
        #expect(app.screen[.heartRate] == nil)

        // It talks again.
        now += 6_000
        for k in 30..<33 {
            for f in Self.frames(step: k) { try write(SerialFraming.encode(f).bytes) }
            try pump(at: now + Int64(k - 30) * 250)
        }
        #expect(app.screen.sensor(.heartRate) == .connected)
        #expect(app.screen[.heartRate] == 104)
        #expect(app.screen[.power] == 232)
    }

    /// A device as `bikecomputer run` boots it, on the simulated flash, with the bridge sensors.
    static func device(seed: UInt64) -> DeviceRuntime {
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: seed, deviceNow: .zero)
        return DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: DiscardingArchive(), log: MemoryLog(),
                                  sensors: configuration(), wall: nil, at: .zero)
    }
}

final class DiscardingArchive: RideArchivePort {
    private(set) var stored: [RideID] = []
    func store(rideID: RideID, records: [RideRecord]) throws -> String { stored.append(rideID); return "kept in memory" }
    func delete(rideID: RideID) throws { stored.removeAll { $0 == rideID } }
}

func payload(_ bytes: [UInt8]) -> Payload { Payload(bytes)! }

func ms(_ v: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: v) }

/// Little-endian byte writer for building payloads independently of the decoders.
struct LE {
    var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    mutating func s16(_ v: Int16) { u16(UInt16(bitPattern: v)) }
}
