import RideModel

/// Input for the data source as a transport delivers it, before anything has parsed it. Every
/// transport (the board's bridge socket and serial line, the simulator's bridge, the benchmark,
/// the tests) hands these to `DeviceRuntime.receive(_:at:)`, which passes them here; nothing
/// else parses, decodes or counts sensor input.
///
/// A new input kind (a GPS report from gpsd, say) is a case here, its parser beside it, and one
/// branch in `SensorInputs.receive`; the transport that reads it is a board component.
public enum RawSensorInput {
    /// One SOCK_SEQPACKET packet: one bridge frame. `truncated` when it did not fit the receive
    /// buffer (counted as malformed, never parsed).
    case bridgePacket(UnsafeRawBufferPointer, truncated: Bool)
    /// Bytes read from a serial bridge, in any chunking (COBS records, see `SerialDeframer`).
    case serialBytes(UnsafeRawBufferPointer)
    /// One line from gpsd (without its line end): a JSON report (`PositionInputs`).
    case gpsdLine(UnsafeRawBufferPointer)
    /// gpsd sent a line longer than the client's buffer (dropped).
    case gpsdLineTooLong
    /// The connection to gpsd ended (it connects again by itself).
    case gpsdDisconnected
    /// The barometer's 24 calibration registers (0x88…), once when it is opened.
    case barometerCalibration(UnsafeRawBufferPointer)
    /// The barometer's 6 data registers (0xF7…), once a second.
    case barometerData(UnsafeRawBufferPointer)
}

/// The one owner of sensor input: parses raw input (bridge packets, serial bytes), runs the data
/// source, and counts everything that went wrong in one status value (frame errors and serial
/// framing errors together). Emits `SensorEvent`s for the app core. A frame allocates nothing.
public struct SensorInputs: Sendable {
    public private(set) var source: DataSource
    var deframer = SerialDeframer()
    /// GPS and barometer (docs/gps.md).
    public internal(set) var positioning = PositionInputs()

    public init(_ configuration: DataSourceConfiguration) { source = DataSource(configuration) }

    public var configuration: DataSourceConfiguration { source.configuration }

    /// Counters of the data source with the serial framing's folded in.
    public var status: DataSourceStatus {
        var s = source.status
        for k in BadInput.allCases { s.bad.count(k, by: deframer.bad[k]) }
        return s
    }

    /// Announces every role's initial state (the device started).
    public mutating func start(at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        source.start(at: now, emit)
    }

    /// The paired sensors changed (`DataSource.replaceSensors`).
    public mutating func replaceSensors(_ sensors: [PairedSensor], at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        source.replaceSensors(sensors, at: now, emit)
    }

    /// A bridge connected to the socket (or the serial device was opened).
    public mutating func bridgeConnected(at now: MonotonicInstant) { source.bridgeConnected(at: now) }

    /// The socket closed or the serial device went away: every sensor behind the bridge is lost.
    public mutating func bridgeDisconnected(at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        source.bridgeDisconnected(at: now, emit)
    }

    /// Parses and handles one raw input.
    public mutating func receive(_ input: RawSensorInput, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        switch input {
        case .bridgePacket(let bytes, let truncated):
            if truncated { source.count(.malformedFrame); return }
            do throws(DecodeError) {
                let frame = try BridgeFrame.parse(bytes)
                handle(frame, at: now, emit)
            } catch {
                source.count(error.kind)
            }
        case .serialBytes(let bytes):
            // The deframer is a fixed-size value: moving it out avoids overlapping access to self
            // without copying the data source (whose arrays would then be copied on write).
            var d = deframer
            d.feed(bytes) { handle($0, at: now, emit) }
            deframer = d
        case .gpsdLine(let line): positioning.gpsdLine(line, at: now, &source, emit)
        case .gpsdLineTooLong: positioning.gpsdLineTooLong(at: now, &source, emit)
        case .gpsdDisconnected: positioning.gpsdDisconnected(at: now, &source, emit)
        case .barometerCalibration(let bytes): positioning.barometerCalibrationBytes(bytes)
        case .barometerData(let bytes): positioning.barometerData(bytes, at: now, &source, emit)
        }
    }

    /// One parsed frame: sensor data and links to the data source, a search's results to the app.
    mutating func handle(_ frame: BridgeFrame, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        source.handle(frame, at: now, emit)
        switch frame.message {
        case .found(let f):
            emit(.found(Self.found(f), at: now))
        case let .scanState(running, _, found):
            emit(.search(running: running, found: Int(found), at: now))
        case let .configState(readable, line, _):
            emit(.bridgeConfig(readable: readable, line: Int(line), at: now))
        default:
            break
        }
    }

    /// A found frame in pairing's words: the kind from the ANT+ device type or the BLE services
    /// advertised (`SensorKind`).
    public static func found(_ f: FoundSensorFrame) -> FoundSensor {
        switch f.identity {
        case let .ant(n, t, _):
            FoundSensor(id: SourceIdentity.ant(deviceNumber: n, deviceType: t, transmissionType: 0).description,
                        kind: SensorKind(antDeviceType: t), name: f.name.text, rssi: f.rssi.map(Int.init))
        case .ble(let a):
            FoundSensor(id: SourceIdentity.ble(a).description, kind: SensorKind(foundServices: f.profileCode),
                        name: f.name.text, rssi: f.rssi.map(Int.init))
        case .onboard:
            FoundSensor(id: f.identity.description, kind: nil, name: f.name.text, rssi: f.rssi.map(Int.init))
        }
    }

    /// Readings an onboard receiver delivered decoded (see `DataSource.handle(_:from:at:_:)`).
    public mutating func receive(_ values: DerivedValues, from who: SourceIdentity, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        source.handle(values, from: who, at: now, emit)
    }

    /// An onboard receiver's link changed (a GPS gained or lost its fix).
    public mutating func link(_ who: SourceIdentity, _ state: LinkState, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        source.link(who, state, at: now, emit)
    }

    /// Time passing: stale and lost sources, a silent bridge. At least once a second.
    public mutating func tick(at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        positioning.tick(at: now, &source, emit)
        source.tick(at: now, emit)
    }
}

extension DataSourceStatus {
    /// One log line with the non-zero counters, e.g.
    /// "sensors: frames 1200 decoded 1180 samples 2400; bad: truncated 3 unpaired_sensor 17".
    public var logLine: String {
        var s = "sensors: frames \(framesReceived) decoded \(payloadsDecoded) samples \(samplesEmitted)"
        s += " bridge \(bridgeConnected ? "up" : "down") connections \(bridgeConnections)"
        var bads = ""
        for k in BadInput.allCases where bad[k] > 0 { bads += " \(k) \(bad[k])" }
        return bads.isEmpty ? s : s + "; bad:" + bads
    }
}
