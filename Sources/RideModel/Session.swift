/// The session lifecycle of workout-model.md §1:
/// idle → prepared → running ⇄ paused → stopped → ended → idle.
public enum SessionState: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case idle = 0, prepared = 1, running = 2, paused = 3, stopped = 4, ended = 5

    /// A ride exists and has not been saved or discarded yet.
    public var isRideInProgress: Bool {
        switch self {
        case .prepared, .running, .paused, .stopped: true
        case .idle, .ended: false
        }
    }

    public var description: String {
        switch self {
        case .idle: "idle"
        case .prepared: "prepared"
        case .running: "running"
        case .paused: "paused"
        case .stopped: "stopped"
        case .ended: "ended"
        }
    }
}

/// What asked for a pause, resume or lap.
public enum Trigger: UInt8, Sendable, Hashable, CustomStringConvertible {
    case manual = 0
    case auto = 1        // auto-pause / auto-resume
    case distance = 2    // auto-lap by distance
    case time = 3        // auto-lap by time
    case sessionEnd = 4  // the last lap, closed by the stop
    case remote = 5      // control socket or companion

    public var description: String {
        switch self {
        case .manual: "manual"
        case .auto: "auto"
        case .distance: "distance"
        case .time: "time"
        case .sessionEnd: "session_end"
        case .remote: "remote"
        }
    }
}

/// What the rider can ask the session to do.
public enum SessionAction: UInt8, Sendable, Hashable, CustomStringConvertible {
    case prepare, cancel, start, pause, resume, lap, stop, save, discard, dismiss

    public var description: String {
        switch self {
        case .prepare: "prepare"
        case .cancel: "cancel"
        case .start: "start"
        case .pause: "pause"
        case .resume: "resume"
        case .lap: "lap"
        case .stop: "stop"
        case .save: "save"
        case .discard: "discard"
        case .dismiss: "dismiss"
        }
    }
}

/// Why a transition was refused. Never silently ignored.
public enum SessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A start (or prepare) while a ride is prepared, running, paused or stopped.
    case rideAlreadyInProgress(SessionState)
    /// The action is not valid in this state (pause while idle, resume while running, ...).
    case invalidTransition(from: SessionState, action: SessionAction)
    /// The transition's timestamp is earlier than the previous transition's.
    case timeWentBackwards(last: MonotonicInstant, requested: MonotonicInstant)

    public var description: String {
        switch self {
        case .rideAlreadyInProgress(let s):
            "ride already in progress (\(s)): end or discard it before starting another"
        case .invalidTransition(let from, let action):
            "cannot \(action) while \(from)"
        case .timeWentBackwards(let last, let requested):
            "transition at \(requested) is before the previous one at \(last)"
        }
    }
}

/// The lifecycle state machine. Pure: every transition takes its timestamp as a value and is
/// either applied (returning the new state) or refused with a `SessionError`.
public struct SessionLifecycle: Sendable, Hashable {
    public internal(set) var state: SessionState = .idle
    /// The instant of the last applied transition.
    public internal(set) var lastTransition: MonotonicInstant?
    /// Whether the ride was saved (true) or discarded (false) once `ended`.
    public internal(set) var saved: Bool?

    public init() {}

    /// Restores a lifecycle in `state` (crash recovery).
    public init(restoring state: SessionState, lastTransition: MonotonicInstant?) {
        self.state = state
        self.lastTransition = lastTransition
    }

    /// Whether `action` would be accepted now (no side effect).
    public func check(_ action: SessionAction, at instant: MonotonicInstant) -> SessionError? {
        if let last = lastTransition, instant < last {
            return .timeWentBackwards(last: last, requested: instant)
        }
        switch (action, state) {
        case (.prepare, .idle), (.prepare, .ended): return nil
        case (.prepare, _), (.start, .running), (.start, .paused), (.start, .stopped):
            return .rideAlreadyInProgress(state)
        case (.cancel, .prepared), (.start, .prepared): return nil
        case (.pause, .running), (.lap, .running): return nil
        case (.resume, .paused): return nil
        case (.stop, .running), (.stop, .paused): return nil
        case (.save, .stopped), (.discard, .stopped): return nil
        case (.dismiss, .ended): return nil
        default: return .invalidTransition(from: state, action: action)
        }
    }

    /// Applies `action` at `instant`, or throws why not.
    @discardableResult
    public mutating func apply(_ action: SessionAction, at instant: MonotonicInstant) throws(SessionError) -> SessionState {
        if let error = check(action, at: instant) { throw error }
        switch action {
        case .prepare: state = .prepared; saved = nil
        case .cancel: state = .idle
        case .start: state = .running
        case .pause: state = .paused
        case .resume: state = .running
        case .lap: break
        case .stop: state = .stopped
        case .save: state = .ended; saved = true
        case .discard: state = .ended; saved = false
        case .dismiss: state = .idle
        }
        lastTransition = instant
        return state
    }
}
