import AppCore
import BoardIO
import BoardWiring
import Configuration
import Device
import Foundation
import Glibc
import RideModel
import Sensors
import Testing

/// The bridge as a version-2 bridge process drives the app's socket: hello, its requests read
/// back, notification sockets handed over with SCM_RIGHTS.
final class FakeBridge {
    let connection: SeqPacketConnection

    init(_ rig: Rig) throws {
        connection = try SeqPacketConnection.connect(path: rig.settings.bridgePath, nonBlocking: true)
        rig.loop.pollDescriptors()
    }

    func send(_ m: BridgeMessage) throws { try connection.send(BridgeFrame(bridgeTimeUs: 1, m).encoded().bytes) }

    /// Hands a notification socket over; returns "bluetoothd's" end, to write values into.
    func handSocket(_ who: SourceIdentity, _ code: UInt16) throws -> Int32 {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        try connection.send(BridgeFrame(bridgeTimeUs: 1, .notificationSocket(who, profileCode: code)).encoded().bytes,
                            passing: FileDescriptor(rawValue: fds[1]))
        Glibc.close(fds[1])
        return fds[0]
    }

    /// Frames the app sent since the last call.
    func received() -> [BridgeMessage] {
        var out: [BridgeMessage] = []
        var buffer = [UInt8](repeating: 0, count: 128)
        while true {
            guard let r = try? buffer.withUnsafeMutableBytes({ try connection.receive(into: $0) }), case .data(let n, _) = r else { break }
            if let f = try? BridgeFrame.parse(Array(buffer[0..<n])) { out.append(f.message) }
        }
        return out
    }

    func close() { connection.close() }
}

@Suite(.serialized) struct SensorsSetupTests {
    static let strapAddress = "C0:FF:EE:00:00:01"
    static let strap = SourceIdentity.ble(BLEAddress(strapAddress)!)
    static let meter = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:02")!)
    static let configText = """
        # the rider's config: everything here must survive pairing
        [training]
        auto_pause = false   # indoor

        [[sensor]]
        transport = "ble"
        role = "heart_rate"
        ble_address = "\(strapAddress)"

        """

    static func strapSensor() -> DeviceConfig.Sensor {
        var s = DeviceConfig.Sensor(transport: .ble, role: .heartRate)
        s.bleAddress = strapAddress
        return s
    }

    func press(_ rig: Rig, _ index: Int) {
        rig.buttons.edge(index, true, atMs: rig.loop.nowMs)
        rig.run(ms: 60)
        rig.buttons.edge(index, false, atMs: rig.loop.nowMs)
        rig.run(ms: 60)
    }

    @Test func aVersion2BridgeIsAnsweredAndTheSocketsItHandsOverAreRead() throws {
        let rig = try Rig(sensors: [Self.strapSensor()])
        let bridge = try FakeBridge(rig)
        try bridge.send(.hello(protocolVersionMax: 2, radios: 2, bridgeID: 7))
        rig.run(ms: 100)
        #expect(bridge.received() == [.appHello(protocolVersionMax: BridgeFrame.versionMax, flags: BridgeFrame.appTakesSockets)])
        let bluez = try bridge.handSocket(Self.strap, 0x2A37)
        defer { Glibc.close(bluez) }
        rig.run(ms: 100)
        for bpm: UInt8 in [120, 121, 122] {
            _ = [UInt8]([0x00, bpm]).withUnsafeBytes { Glibc.send(bluez, $0.baseAddress, $0.count, 0) }
            rig.run(ms: 250)
        }
        #expect(rig.runtime.core.screen[.heartRate] == 122, "the values read from the socket reach the ride")
        #expect(rig.runtime.core.screen.sensor(.heartRate) == .connected)
        var st = try rig.status()
        var b = try #require(st["bridge"] as? [String: Any])
        #expect(b["sockets_open"] as? Int == 1 && b["protocol_version"] as? Int == 2)
        let counts = try #require(b["socket_values"] as? [[String: Any]])
        #expect(counts.first?["sensor"] as? String == "ble:\(Self.strapAddress)" && counts.first?["values"] as? Int == 3)
        // bluetoothd closes its end (the strap disconnected): the app lets the socket go.
        Glibc.close(bluez)
        rig.run(ms: 100)
        st = try rig.status()
        b = try #require(st["bridge"] as? [String: Any])
        #expect(b["sockets_open"] as? Int == 0)
        // A socket frame without a descriptor is misplaced: counted, not fatal.
        try bridge.send(.notificationSocket(Self.strap, profileCode: 0x2A37))
        rig.run(ms: 100)
        #expect(rig.runtime.sensorStatus.bad[.badFrameKind] == 1)
        bridge.close()
    }

    @Test func aVersion1BridgeGetsNothingItCannotRead() throws {
        let rig = try Rig(sensors: [Self.strapSensor()])
        let bridge = try FakeBridge(rig)
        try bridge.send(.hello(protocolVersionMax: 1, radios: 2, bridgeID: 7))
        rig.run(ms: 100)
        #expect(rig.wiring.controlLine("sensors scan 5").isError)
        #expect(bridge.received().isEmpty)
        bridge.close()
    }

    /// The Sensors screen: PAGE on idle opens it, LAP on SEARCH asks the bridge to search, what
    /// it finds is listed, LAP pairs it (the config file gains its block, everything else kept;
    /// the data source takes it at once; the bridge is told), LAP twice forgets one.
    @Test func searchPairAndForgetFromTheScreen() throws {
        let rig = try Rig(sensors: [Self.strapSensor()], configFile: Self.configText)
        chmod(rig.dir + "/config.toml", 0o640)
        let bridge = try FakeBridge(rig)
        try bridge.send(.hello(protocolVersionMax: 2, radios: 3, bridgeID: 7))
        rig.run(ms: 100)
        _ = bridge.received()
        press(rig, 2)  // PAGE
        #expect(rig.runtime.core.screen.mode == .sensors)
        let menu0 = rig.runtime.core.screen.sensorsMenu
        #expect(menu0.paired.map(\.id) == ["ble:\(Self.strapAddress)"] && menu0.paired[0].kind == .heartRate)
        press(rig, 2)  // to SEARCH
        press(rig, 1)  // LAP: search
        #expect(bridge.received() == [.scanRequest(start: true, radios: 3, seconds: UInt16(SensorsMenu.searchSeconds))])
        try bridge.send(.scanState(running: true, radios: 3, found: 0))
        try bridge.send(.found(FoundSensorFrame(Self.meter, profileCode: BridgeFrame.serviceCyclingPower, rssi: -67, name: SensorName("Crank PM"))))
        try bridge.send(.found(FoundSensorFrame(Self.strap, profileCode: BridgeFrame.serviceHeartRate, rssi: -50, name: SensorName("Strap"))))
        rig.run(ms: 200)
        var menu = rig.runtime.core.screen.sensorsMenu
        #expect(menu.page == .found && menu.found.map(\.id) == ["ble:C0:FF:EE:00:00:02"], "the paired strap is not offered again")
        #expect(menu.found.first?.kind == .power && menu.found.first?.rssi == -67)
        press(rig, 1)  // LAP: pair the meter
        menu = rig.runtime.core.screen.sensorsMenu
        #expect(menu.message == "PAIRED" && menu.page == .list)
        #expect(menu.paired.map(\.id) == ["ble:\(Self.strapAddress)", "ble:C0:FF:EE:00:00:02"] && menu.cursor == 1)
        let text = try String(contentsOfFile: rig.dir + "/config.toml", encoding: .utf8)
        #expect(text.hasPrefix(Self.configText), "the file before is kept byte for byte")
        #expect(text.contains("ble_address = \"C0:FF:EE:00:00:02\"") && text.contains("role = \"power\"") && text.contains("name = \"Crank PM\""))
        var st = stat()
        #expect(stat(rig.dir + "/config.toml", &st) == 0 && st.st_mode & 0o777 == 0o640, "its permissions are kept")
        #expect(rig.runtime.sensorReports.map { $0.sensor.identity } == [Self.strap, Self.meter], "the data source took it without a restart")
        #expect(bridge.received() == [.reload])
        // Values from the new meter count at once.
        try bridge.send(.data(Self.meter, profileCode: 0x2A63, Payload([0, 0, 0xFA, 0])!))
        rig.run(ms: 100)
        #expect(rig.runtime.core.screen[.power] == 250)
        // Forget the strap: LAP asks, LAP forgets.
        press(rig, 2)  // cursor 1 -> SEARCH
        press(rig, 2)  // -> the strap
        press(rig, 1)
        #expect(rig.runtime.core.screen.sensorsMenu.page == .confirmForget(0))
        press(rig, 1)
        #expect(rig.runtime.core.screen.sensorsMenu.message == "FORGOTTEN")
        let after = try String(contentsOfFile: rig.dir + "/config.toml", encoding: .utf8)
        #expect(!after.contains(Self.strapAddress) && after.contains("# the rider's config") && after.contains("auto_pause = false   # indoor"))
        #expect(rig.runtime.sensorReports.map { $0.sensor.identity } == [Self.meter])
        #expect(bridge.received() == [.reload])
        // START leaves the screen; START again starts a ride.
        press(rig, 0)
        #expect(rig.runtime.core.screen.mode == .idle)
        press(rig, 0)
        #expect(rig.runtime.state == .prepared)
        bridge.close()
    }

    @Test func aConfigFilePairingCreatesIsReadableByTheBridge() throws {
        // The board's unit runs the app with UMask=0077; the bridge, another user, reads the file.
        // Before the fix a file created by pairing was 0600 and the bridge never saw the sensor.
        let rig = try Rig(sensors: [])
        let old = umask(0o077)
        defer { umask(old) }
        #expect(access(rig.dir + "/config.toml", F_OK) != 0)
        #expect(rig.wiring.controlLine("sensors pair ant:777/121 speed_cadence").line == "ok paired ant:777/121 as speed_cadence")
        var st = stat()
        #expect(stat(rig.dir + "/config.toml", &st) == 0 && st.st_mode & 0o777 == 0o644, "mode \(String(st.st_mode & 0o777, radix: 8))")
    }

    @Test func theShellsCommandsOverTheControlSocket() throws {
        let rig = try Rig(sensors: [Self.strapSensor()], configFile: Self.configText)
        #expect(rig.wiring.controlLine("sensors scan 5").line.hasPrefix("error no bridge"), "no bridge connected")
        let bridge = try FakeBridge(rig)
        try bridge.send(.hello(protocolVersionMax: 2, radios: 2, bridgeID: 7))
        rig.run(ms: 100)
        _ = bridge.received()
        #expect(rig.wiring.controlLine("sensors scan 5").line == "ok searching for 5 s")
        #expect(bridge.received() == [.scanRequest(start: true, radios: 2, seconds: 5)])
        try bridge.send(.found(FoundSensorFrame(.ant(deviceNumber: 777, deviceType: 121, transmissionType: 1), profileCode: 121, rssi: nil, name: SensorName())))
        rig.run(ms: 100)
        let found = rig.wiring.controlLine("sensors found").line
        #expect(found.contains("\"sensor\":\"ant:777/121/0\"") && found.contains("\"kind\":\"speed_cadence\"") && found.contains("\"paired\":false"), "\(found)")
        #expect(rig.wiring.controlLine("sensors pair ant:777/121 speed_cadence Wahoo RPM").line == "ok paired ant:777/121 as speed_cadence")
        #expect(rig.wiring.controlLine("sensors pair ant:777/121 speed_cadence").line.contains("already paired"))
        #expect(rig.wiring.controlLine("sensors pair ble:nope power").isError)
        #expect(rig.wiring.controlLine("sensors pair ble:C0:FF:EE:00:00:09 rocket").line.contains("kind rocket is not one of heart_rate, power"))
        #expect(rig.wiring.controlLine("sensors forget ble:C0:FF:EE:00:00:09").line.contains("is not paired"))
        let text = try String(contentsOfFile: rig.dir + "/config.toml", encoding: .utf8)
        #expect(text.contains("ant_device_number = 777") && text.contains("name = \"Wahoo RPM\""))
        #expect(try ConfigLoader.load(text: text).get().sensors.count == 2)
        #expect(rig.wiring.controlLine("sensors forget ant:777/121").line == "ok forgot ant:777/121")
        #expect(rig.wiring.controlLine("sensors stop").line == "ok search stopped")
        #expect(bridge.received().contains(.scanRequest(start: false, radios: 2, seconds: 0)))
        bridge.close()
    }
}
