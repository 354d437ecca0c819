import AppCore
import RideModel

/// The device's answer to one control-socket line.
public struct ControlAnswer: Sendable, Hashable {
    /// The reply line (without its newline): `ok ...` or `error ...`.
    public var line: String
    public var isError: Bool
    /// For `subscribe`: the lines only this client gets after the reply (snapshot, replayed
    /// events); the connection then carries the stream.
    public var subscription: [String]?
    /// Set: the command changed the ride's state and its journal records are not durable yet.
    /// Nothing is sent now; the runtime hands the reply (`line`, or it with "(not yet durable:
    /// why)") to its `durableReplySink` under this id once the change is durable, once the card
    /// reports that it cannot be, or after `DeviceRuntime.controlReplyWaitMsMax`.
    public var awaitingDurability: UInt64?

    public init(_ line: String, isError: Bool = false, subscription: [String]? = nil, awaitingDurability: UInt64? = nil) {
        self.line = line
        self.isError = isError
        self.subscription = subscription
        self.awaitingDurability = awaitingDurability
    }
}

/// Somebody following the ride (the control socket's subscribers, a companion, the simulator's
/// summary): told about every effect the core emits, after the runtime has carried it out. The
/// core is lent for the call: read it, never feed the runtime from inside `observe`.
public protocol RideObserver: AnyObject {
    func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant)
}
