import AppCore
import BoardIO
import BoardWiring
import Configuration
import Glibc
import RideModel
import Sensors
import Testing

/// Bad input on the bridge's socket is counted and the ride goes on (issue 27).
@Suite(.serialized) struct HostileBridgeInputTests {
    /// A packet of 0 bytes is bad input (a malformed frame), not the bridge going away: before
    /// issue 27 the read of 0 bytes was taken for a disconnect and every sensor was lost.
    @Test func anEmptyPacketIsAMalformedFrameNotADisconnect() throws {
        var hr = DeviceConfig.Sensor(transport: .ble, role: .heartRate)
        hr.bleAddress = "C0:FF:EE:00:00:01"
        let rig = try Rig(sensors: [hr])
        let bridge = try SocketClient(path: rig.settings.bridgePath, type: Int32(SOCK_SEQPACKET.rawValue))
        rig.loop.pollDescriptors()
        let who = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:00:01")!)
        bridge.send(BridgeFrame(bridgeTimeUs: 0, .data(who, profileCode: 0x2A37, Payload([0x00, 120])!)).encoded().bytes)
        rig.run(ms: 100)
        #expect(rig.runtime.core.screen.sensor(.heartRate) == .connected)
        let malformedBefore = rig.runtime.sensorStatus.bad[BadInput.malformedFrame]
        for _ in 0..<3 { bridge.send([]) }
        rig.run(ms: 100)
        bridge.send(BridgeFrame(bridgeTimeUs: 0, .data(who, profileCode: 0x2A37, Payload([0x00, 131])!)).encoded().bytes)
        rig.run(ms: 100)
        #expect(rig.wiring.bridge.isConnected)
        #expect(rig.wiring.bridge.disconnections == 0)
        #expect(rig.wiring.bridge.emptyPackets == 3)
        #expect(rig.runtime.sensorStatus.bad[BadInput.malformedFrame] == malformedBefore + 3)
        #expect(rig.runtime.core.screen.sensor(.heartRate) == .connected)
        #expect(rig.runtime.core.screen[.heartRate] == 131)
        let st = try rig.status()
        let b = try #require(st["bridge"] as? [String: Any])
        #expect(b["empty_packets"] as? Int == 3 && b["disconnections"] as? Int == 0)
        // The end of the connection is still the end.
        _ = Glibc.shutdown(bridge.fd, Int32(SHUT_RDWR))
        rig.run(ms: 100)
        #expect(!rig.wiring.bridge.isConnected)
        #expect(rig.wiring.bridge.disconnections == 1)
    }

    /// A bridge that cannot read the config file says so (protocol version 3): the unit shows
    /// CONFIG ERR LINE n once, logs it, and `status` tells where and why; once the file can be
    /// read again, status says so.
    @Test func aBridgeThatCannotReadTheConfigIsShownOnTheUnit() throws {
        let rig = try Rig()
        let bridge = try FakeBridge(rig)
        try bridge.send(.hello(protocolVersionMax: 3, radios: 2, bridgeID: 9))
        rig.run(ms: 100)
        let hellos = bridge.received().compactMap { if case let .appHello(v, _) = $0 { v } else { nil } }
        #expect(hellos == [3], "the app says it speaks version 3")
        try bridge.send(.configState(readable: false, line: 12, BridgeNote("Illegal character '\\x7f'")))
        rig.run(ms: 100)
        #expect(rig.runtime.core.screen.overlay == .sensorConfigUnreadable(line: 12))
        var st = try rig.status()
        var b = try #require(st["bridge"] as? [String: Any])
        #expect(b["config_readable"] as? Bool == false && b["config_error_line"] as? Int == 12)
        #expect((b["config_error"] as? String)?.contains("x7f") == true)
        try bridge.send(.configState(readable: true, line: 0, BridgeNote()))
        rig.run(ms: 100)
        st = try rig.status()
        b = try #require(st["bridge"] as? [String: Any])
        #expect(b["config_readable"] as? Bool == true && b["config_error"] == nil)
    }
}
