/// A timestamped event of the ride (workout-model.md §2).
public struct RideEvent: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: UInt8, Sendable, Hashable {
        case start = 0
        case pause = 1
        case resume = 2
        case lap = 3
        case stop = 4
        case marker = 5
        /// The device was down between the previous durable point and this instant (crash or
        /// power cut); recorded on recovery.
        case gap = 6
        /// Vehicles came up behind (a rear radar): `value` is a `RadarAlertRecord`.
        case radar = 7
    }

    /// What a marker stands for. Markers carry a small numeric value (ml of water, ...).
    public enum MarkerKind: UInt8, Sendable, Hashable {
        case generic = 0
        case water = 1   // value: millilitres
        case food = 2    // value: kcal
        case note = 3
        case segment = 4
    }

    public var kind: Kind
    public var instant: MonotonicInstant
    public var trigger: Trigger
    public var markerKind: MarkerKind
    /// Marker value (e.g. ml of water) or, for a gap, its length in ms.
    public var value: Int64

    public init(_ kind: Kind, at instant: MonotonicInstant, trigger: Trigger = .manual,
                markerKind: MarkerKind = .generic, value: Int64 = 0) {
        self.kind = kind
        self.instant = instant
        self.trigger = trigger
        self.markerKind = markerKind
        self.value = value
    }

    public var description: String { "\(kind)@\(instant.milliseconds)ms(\(trigger))" }
}
