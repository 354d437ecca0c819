import AppCore
import BoardIO
import Device
import RideModel

/// An output line (the buzzer or LED): `GPIOOutputLine` on the board, a double in tests.
public protocol AlertLine: AnyObject {
    func set(active: Bool) throws
}

/// Sounds alerts on the buzzer/LED line: on at the alert, off `pulseMs` later (a loop timer;
/// nothing blocks). Before it is started, and without a line, alerts are only shown.
public final class BuzzerComponent: BoardComponent, AlertOutputPort {
    public static let pulseMs: Int64 = 300

    let line: (any AlertLine)?
    let log: LogPort
    weak var loop: EventLoop?
    var offTimer: TimerID?
    public let state: String
    public let hardwareErrors: UInt64
    /// Failed line writes (logged; the ride goes on).
    public private(set) var writeErrors: UInt64 = 0
    /// Pulses started.
    public private(set) var pulses: UInt64 = 0

    public init(_ line: (any AlertLine)?, state: String, errors: UInt64 = 0, log: LogPort) {
        self.line = line
        self.state = state
        hardwareErrors = errors
        self.log = log
    }

    public var isPresent: Bool { line != nil }

    public func start(_ board: BoardWiring) throws { loop = board.loop }

    public func pulse(for alert: Alert, at now: MonotonicInstant) {
        guard let loop, line != nil else { return }
        pulses &+= 1
        set(true)
        if let t = offTimer { loop.cancelTimer(t) }
        offTimer = loop.scheduleTimer("buzzer.off", afterMs: Self.pulseMs) { [unowned self] in
            self.offTimer = nil
            self.set(false)
        }
    }

    func set(_ on: Bool) {
        do { try line?.set(active: on) } catch {
            writeErrors &+= 1
            log.log(.error, "buzzer: \(error)")
        }
    }

    public func close() {
        if let t = offTimer { loop?.cancelTimer(t); set(false) }
        offTimer = nil
    }
}
