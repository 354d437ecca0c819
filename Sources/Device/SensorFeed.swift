import AppCore
import RideModel
import Sensors

/// Connects the data source to the app core: bridge frames (from the socket or the serial line)
/// go in, `AppInput`s come out. Sensors cannot depend on AppCore, so the mapping of its
/// `SensorOutput` to `AppInput` lives here.
public enum SensorFeed {
    public static func role(_ f: SensorFunction) -> SensorRole {
        switch f {
        case .heartRate: .heartRate
        case .power: .power
        case .speed: .speed
        case .cadence: .cadence
        }
    }

    public static func state(_ s: SourceState) -> SensorState {
        switch s {
        case .notConfigured: .notConfigured
        case .lost: .lost
        case .searching: .searching
        case .stale: .stale
        case .connected: .connected
        }
    }

    /// The app input for one data source output.
    public static func input(_ o: SensorOutput) -> AppInput {
        switch o {
        case .sample(let s): .sample(s)
        case let .function(f, s, battery, t): .sensor(SensorStatus(role(f), state(s), batteryPercent: battery), at: t)
        }
    }
}

extension DataSource {
    /// `handle(_:at:_:)`, delivering app inputs.
    public mutating func handle(_ frame: BridgeFrame, at now: MonotonicInstant, into app: inout AppCore) {
        handle(frame, at: now) { app.handle(SensorFeed.input($0)) }
    }

    public mutating func tick(at now: MonotonicInstant, into app: inout AppCore) {
        tick(at: now) { app.handle(SensorFeed.input($0)) }
    }

    public mutating func start(at now: MonotonicInstant, into app: inout AppCore) {
        start(at: now) { app.handle(SensorFeed.input($0)) }
    }

    public mutating func bridgeDisconnected(at now: MonotonicInstant, into app: inout AppCore) {
        bridgeDisconnected(at: now) { app.handle(SensorFeed.input($0)) }
    }
}

/// The app side of a bridge link, for the runtime's epoll loop: packets from the Unix socket or
/// bytes from the serial line go in, app inputs come out, and one status value counts everything
/// that went wrong (frame errors and serial framing errors together).
public struct SensorInputs: Sendable {
    public var source: DataSource
    public var deframer = SerialDeframer()

    public init(_ configuration: DataSourceConfiguration) { source = DataSource(configuration) }

    /// Counters of the data source with the serial framing's folded in.
    public var status: DataSourceStatus {
        var s = source.status
        for k in BadInput.allCases { s.bad.count(k, by: deframer.bad[k]) }
        return s
    }

    public mutating func start(at now: MonotonicInstant, into app: inout AppCore) {
        source.start(at: now, into: &app)
    }

    /// A bridge connected to the socket (or the serial device was opened).
    public mutating func bridgeConnected(at now: MonotonicInstant) { source.bridgeConnected(at: now) }

    /// One SOCK_SEQPACKET packet; `truncated` when it did not fit the receive buffer.
    public mutating func packet(_ bytes: UnsafeRawBufferPointer, truncated: Bool = false, at now: MonotonicInstant, into app: inout AppCore) {
        if truncated { source.count(.malformedFrame); return }
        do {
            let frame = try BridgeFrame.parse(bytes)
            source.handle(frame, at: now, into: &app)
        } catch {
            source.count(error.kind)
        }
    }

    /// Bytes read from the serial line, in any chunking.
    public mutating func serialBytes(_ bytes: UnsafeRawBufferPointer, at now: MonotonicInstant, into app: inout AppCore) {
        // The deframer is a fixed-size value: moving it out avoids overlapping access to self
        // without copying the data source (whose arrays would then be copied on write).
        var d = deframer
        d.feed(bytes) { source.handle($0, at: now, into: &app) }
        deframer = d
    }

    /// The socket closed or the serial device went away.
    public mutating func bridgeClosed(at now: MonotonicInstant, into app: inout AppCore) {
        source.bridgeDisconnected(at: now, into: &app)
    }

    public mutating func tick(at now: MonotonicInstant, into app: inout AppCore) {
        source.tick(at: now, into: &app)
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
