import Positioning
import Sensors

/// What the runtime tells about the GPS and the barometer (their components log and show it).
extension DeviceRuntime {
    /// GPS problems since the last call (bad reports, rejected fixes...), oldest first, with how
    /// many of each kind so far.
    public func drainPositionProblems(_ body: (GpsProblem, UInt64) -> Void) { inputs.drainPositionProblems(body) }

    /// The GPS receiver's counters and status, the barometer's readings.
    public var positioning: PositionInputs { inputs.positioning }

    /// The data source's one odometer (wheel and GPS increments, each metre once), m.
    public var odometerM: Double { inputs.source.odometerM }
}
