import AppCore
import BoardIO
import Control
import Device
import RideModel

/// An output line (the buzzer or LED): `GPIOOutputLine` on the board, a double in tests.
public protocol AlertLine: AnyObject {
    func set(active: Bool) throws
}

/// Sounds alerts on the buzzer/LED line in their pattern (`Alert.beep`: one 300 ms pulse, the
/// radar's short double or triple beep and its long "road clear" one): on, off and on again on
/// loop timers; nothing blocks. A new alert cuts the one sounding. Before it is started, and
/// without a line, alerts are only shown.
public final class BuzzerComponent: BoardComponent, AlertOutputPort {
    public static let pulseMs: Int64 = Beep.single.onMs

    let line: (any AlertLine)?
    let log: LogPort
    weak var loop: EventLoop?
    var offTimer: TimerID?
    /// The pattern sounding and the pulses of it still to come.
    var beep = Beep.single
    var pulsesLeft = 0
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

    /// `buzzer`: its line's state, the patterns started and the failed writes.
    public func writeStatus(into w: inout JSONWriter) {
        w.beginObject("buzzer")
        w.string("state", state)
        w.int("patterns", Int64(clamping: pulses))
        w.int("write_errors", Int64(clamping: writeErrors))
        w.endObject()
    }

    public func pulse(for alert: Alert, at now: MonotonicInstant) {
        guard loop != nil, line != nil else { return }
        pulses &+= 1
        if let t = offTimer { loop?.cancelTimer(t) }
        beep = alert.beep
        pulsesLeft = beep.pulses
        assert(pulsesLeft >= 1 && pulsesLeft <= Beep.pulsesMax)
        on()
    }

    /// One pulse of the pattern: on now, off after `onMs`, the next one after `offMs` more.
    func on() {
        guard let loop else { return }
        pulsesLeft -= 1
        set(true)
        offTimer = loop.scheduleTimer("buzzer.off", afterMs: beep.onMs) { [unowned self] in
            self.set(false)
            self.offTimer = nil
            guard self.pulsesLeft > 0, let loop = self.loop else { return }
            self.offTimer = loop.scheduleTimer("buzzer.on", afterMs: self.beep.offMs) { [unowned self] in
                self.offTimer = nil
                self.on()
            }
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
