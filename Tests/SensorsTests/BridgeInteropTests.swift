import Testing
import RideModel
@testable import Sensors

/// The stream the Python bridge writes for its recorded ride (board/bridge/tests, regenerated
/// there and checked byte for byte) decodes in Swift: same framing, same frames, same values.
@Suite struct BridgeInteropTests {
    @Test func pythonBridgeStreamDecodes() throws {
        let lines = FuzzTests.readLines("python-bridge-stream.hex")
        #expect(lines.count == 1)
        let stream = try #require(Payload.hexBytes(lines.first ?? ""))
        var deframer = SerialDeframer()
        var frames: [BridgeFrame] = []
        deframer.feed(stream) { frames.append($0) }
        #expect(deframer.bad.total == 0)
        #expect(frames.count == 12)
        #expect(frames.first?.message == .hello(protocolVersionMax: 1, radios: 3, bridgeID: 0xB1DE))
        #expect(frames.last?.message == .heartbeat(sequence: 1))

        let pm = SourceIdentity.ble(BLEAddress("C0:FF:EE:00:11:22")!)
        var ds = DataSource(DataSourceConfiguration(sensors: [
            PairedSensor(.ant(deviceNumber: 4321, deviceType: 120, transmissionType: 0)),
            PairedSensor(pm, provides: QuantitySet(.power, .cadence)),
        ]))
        var samples: [Quantity: [Double]] = [:]
        var powerStates: [SensorState] = []
        var powerBattery: Int?
        for f in frames {
            ds.handle(f, at: MonotonicInstant(milliseconds: Int64(f.bridgeTimeUs / 1000))) { o in
                switch o {
                case .sample(let s): samples[s.quantity, default: []].append(s.value)
                case let .status(st, _) where st.role == .power: powerStates.append(st.state); powerBattery = st.batteryPercent ?? powerBattery
                default: break
                }
            }
        }
        #expect(samples[.heartRate] == [72, 72, 73])
        #expect(samples[.power] == [200, 210, 220])
        #expect(samples[.cadence] == [120, 120])
        #expect(samples[.rrInterval] == [515.0 / 1024])
        #expect(powerBattery == 90)
        #expect(powerStates.last == .lost)
        #expect(ds.status.bad.total == 0)
    }
}

extension Payload {
    /// Hex of any length (the corpus stream is longer than one payload).
    static func hexBytes(_ hex: String) -> [UInt8]? {
        var out: [UInt8] = []
        var it = hex.utf8.makeIterator()
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        while let a = it.next() {
            guard let b = it.next(), let h = nibble(a), let l = nibble(b) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }
}
