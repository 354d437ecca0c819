import Testing
import Glibc
import AppCore
import BoardIO
import Device
import RideModel
@testable import Sensors

/// A bridge writes protocol frames to the app's Unix SOCK_SEQPACKET socket and to a pseudo-terminal
/// (standing in for a serial dongle); the receiving side parses, decodes, runs the data source and
/// feeds a real AppCore, whose screen shows the values. Bridge death shows the sensors as lost;
/// a reconnect restores them.
@Suite(.serialized) struct EndToEndTests {
    static let hrm = SensorIdentity.ant(deviceNumber: 4321, deviceType: 120, transmissionType: 1)
    static let pm = SensorIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)

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
        mutating func drain(_ inputs: inout SensorInputs, _ app: inout AppCore, at now: MonotonicInstant) throws -> Bool {
            guard let c = connection else { return false }
            while true {
                let r = try buffer.withUnsafeMutableBytes { try c.receive(into: $0) }
                switch r {
                case .wouldBlock: return true
                case .closed:
                    c.close()
                    connection = nil
                    inputs.bridgeClosed(at: now, into: &app)
                    return false
                case let .data(n, truncated):
                    buffer.withUnsafeBytes { inputs.packet(UnsafeRawBufferPointer(rebasing: $0[0..<n]), truncated: truncated, at: now, into: &app) }
                }
            }
        }
    }

    @Test func unixSocketBridgeFeedsAppCoreAndSurvivesDeath() throws {
        let path = "/tmp/bikecomputer-sensors-test-\(getpid()).sock"
        let listener = try SeqPacketListener.listen(path: path)
        defer { listener.close() }
        var app = AppCore(randomSeed: 7)
        var inputs = SensorInputs(Self.configuration())
        inputs.start(at: ms(0), into: &app)
        #expect(app.screen.sensor(.heartRate) == .searching)
        #expect(try listener.accept() == nil)

        var bridge = try SeqPacketConnection.connect(path: path)
        var rx = SocketReceiver(connection: try listener.accept())
        #expect(rx.connection != nil)
        inputs.bridgeConnected(at: ms(0))
        try bridge.send(BridgeFrame(bridgeTimeUs: 0, .hello(protocolVersionMax: 1, radios: 3, bridgeID: 1)).encoded().bytes)
        var now: Int64 = 0
        for k in 0..<8 {
            now = Int64(k) * 250
            for f in Self.frames(step: k) { try bridge.send(f.encoded().bytes) }
            try bridge.send([0x09, 0x09])  // a garbage packet: counted, skipped
            #expect(try rx.drain(&inputs, &app, at: ms(now)))
        }
        #expect(app.screen[.heartRate] == 79)
        #expect(app.screen[.power] == 207)
        #expect(app.screen[.cadence] == 120)
        #expect(app.screen.sensor(.heartRate) == .connected)
        #expect(app.screen.sensor(.power) == .connected)
        #expect(app.screen.sensor(.cadence) == .connected)
        #expect(inputs.status.bad[.malformedFrame] == 8)
        #expect(inputs.status.logLine.contains("malformed_frame 8"))

        // The bridge dies.
        bridge.close()
        now += 100
        #expect(try rx.drain(&inputs, &app, at: ms(now)) == false)
        #expect(app.screen.sensor(.heartRate) == .lost)
        #expect(app.screen.sensor(.power) == .lost)
        app.handle(.tick(ms(now + 4000)))
        #expect(app.screen[.heartRate] == nil)
        #expect(app.screen[.power] == nil)

        // It comes back.
        bridge = try SeqPacketConnection.connect(path: path)
        defer { bridge.close() }
        rx.connection = try listener.accept()
        now += 5000
        for k in 20..<24 {
            for f in Self.frames(step: k) { try bridge.send(f.encoded().bytes) }
            #expect(try rx.drain(&inputs, &app, at: ms(now + Int64(k - 20) * 250)))
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
        var app = AppCore(randomSeed: 9)
        var inputs = SensorInputs(Self.configuration())
        inputs.start(at: ms(0), into: &app)
        inputs.bridgeConnected(at: ms(0))
        var buffer = [UInt8](repeating: 0, count: 256)

        func pump(at now: Int64) throws {
            // The pty may deliver what the bridge wrote in pieces: read until nothing is left.
            var idle = 0
            while idle < 3 {
                let r = try buffer.withUnsafeMutableBytes { try port.read(into: $0) }
                switch r {
                case let .data(n, _):
                    idle = 0
                    buffer.withUnsafeBytes { inputs.serialBytes(UnsafeRawBufferPointer(rebasing: $0[0..<n]), at: ms(now), into: &app) }
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
        #expect(inputs.deframer.framesOK == 17)
        #expect(inputs.status.bad.total >= 2)
        #expect(inputs.status.bad[.serialChecksum] + inputs.status.bad[.serialEncoding] >= 2)

        // The dongle goes silent: after the bridge-silence time the sensors are lost.
        inputs.tick(at: ms(now + 5_000), into: &app)
        app.handle(.tick(ms(now + 5_000)))
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
}
