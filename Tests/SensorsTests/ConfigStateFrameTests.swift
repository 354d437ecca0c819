import Sensors
import Testing

/// Protocol version 3's one kind: the bridge says whether it could read the config file
/// (docs/bridge-protocol.md, "Version 3"). The Python side pins the same bytes
/// (board/bridge/tests/test_framing.py, test_config_state_golden_bytes_match_the_swift_layout).
struct ConfigStateFrameTests {
    static let golden: [UInt8] = [
        0x03, 0x0C, 0x0C, 0, 0, 0, 0, 0, 0, 0,   // version 3, kind 12, time 12 µs
        0x00, 0x07, 0x00, 0x04,                  // cannot be read, line 7, 4 bytes of reason
    ] + Array("DEL!".utf8)

    @Test func configStateFrameByteLayout() throws {
        let f = BridgeFrame(bridgeTimeUs: 12, .configState(readable: false, line: 7, BridgeNote("DEL!")))
        #expect(f.encoded().bytes == Self.golden)
        #expect(try BridgeFrame.parse(Self.golden) == f)
        var readable = Self.golden
        readable[10] = 1
        readable[11] = 0
        guard case .configState(true, 0, let note)? = try? BridgeFrame.parse(readable).message else { Issue.record("not parsed"); return }
        #expect(note.text == "DEL!")
    }

    @Test func configStateNeedsVersion3AndItsExactLength() {
        var v2 = Self.golden
        v2[0] = 2
        #expect(throws: DecodeError.self) { try BridgeFrame.parse(v2) }
        #expect(throws: DecodeError.self) { try BridgeFrame.parse(Self.golden + [0]) }
        #expect(throws: DecodeError.self) { try BridgeFrame.parse(Array(Self.golden.dropLast())) }
        var bad = Self.golden
        bad[10] = 2
        #expect(throws: DecodeError.self) { try BridgeFrame.parse(bad) }
    }

    /// The version bump changed no other kind's version byte: a version-2 bridge reads them.
    @Test func versionTwoKindsKeepTheirVersionByte() {
        let request = BridgeFrame(bridgeTimeUs: 1, .scanRequest(start: true, radios: 2, seconds: 30)).encoded().bytes
        #expect(request[0] == 2)
        let hello = BridgeFrame(bridgeTimeUs: 1, .appHello(protocolVersionMax: BridgeFrame.versionMax, flags: 1)).encoded().bytes
        #expect(hello[0] == 2 && hello[10] == 3)
    }

    /// A reason longer than 64 bytes is cut at a character boundary.
    @Test func aLongReasonIsCutAtACharacterBoundary() throws {
        let note = BridgeNote(String(repeating: "é", count: 40))
        #expect(note.count == 64 && note.text == String(repeating: "é", count: 32))
        let f = BridgeFrame(bridgeTimeUs: 0, .configState(readable: false, line: 1, note))
        #expect(try BridgeFrame.parse(f.encoded().bytes) == f)
    }
}
