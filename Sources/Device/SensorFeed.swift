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
