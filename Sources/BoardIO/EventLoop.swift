import CBoardShims

/// The run loop's interface: timers, file descriptors with read/write interest, signals and a
/// stop request. Two loops implement it: `EpollEventLoop` (the board: one thread, epoll,
/// timerfd, signalfd, eventfd) and `ManualEventLoop` (the simulator and tests: time advances only
/// when told). Handlers registered through this protocol run unchanged on either.
///
/// Everything happens on the loop's thread; handlers must not block. Time is CLOCK_MONOTONIC
/// (or the manual clock) in milliseconds since an arbitrary origin.
public protocol EventLoop: AnyObject {
    /// The loop's clock, in milliseconds (monotonic).
    var nowMs: Int64 { get }

    /// Runs `handler` once at `deadlineMs` (or, with `periodMs`, every `periodMs` from then on).
    /// Timers fire in deadline order; equal deadlines fire in the order they were scheduled.
    @discardableResult
    func scheduleTimer(_ name: StaticString, atMs deadlineMs: Int64, periodMs: Int64?,
                       _ handler: @escaping () -> Void) -> TimerID
    /// Cancels a timer; cancelling one that already fired (or an unknown id) does nothing.
    func cancelTimer(_ id: TimerID)

    /// Watches `fd` for `interest`; `handler` is called with what is ready. A handler must do a
    /// bounded amount of work (read at most a named number of bytes) and return.
    func register(_ fd: FileDescriptor, _ name: StaticString, interest: IOInterest,
                  _ handler: @escaping (IOReadiness) -> Void) throws(EventLoopError) -> IORegistration
    /// Changes what a registered descriptor is watched for (e.g. add `.write` while output waits).
    func setInterest(_ registration: IORegistration, _ interest: IOInterest) throws(EventLoopError)
    /// Stops watching the descriptor (the caller still owns and closes it).
    func deregister(_ registration: IORegistration)

    /// Calls `handler` on the loop's thread when one of `signals` (e.g. SIGTERM, SIGINT) arrives.
    /// The epoll loop blocks the signals in the calling thread and reads them from a signalfd:
    /// call this at start-up before any other thread exists (threads inherit the mask), so no
    /// thread can take the signal's default action instead.
    func handleSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws(EventLoopError)

    /// Makes `run()` return after the current turn.
    func stop()

    /// Time spent in handlers and how busy the loop is.
    var stats: EventLoopStats { get }
}

extension EventLoop {
    /// A one-shot timer `delayMs` from now.
    @discardableResult
    public func scheduleTimer(_ name: StaticString, afterMs delayMs: Int64, _ handler: @escaping () -> Void) -> TimerID {
        scheduleTimer(name, atMs: nowMs + max(0, delayMs), periodMs: nil, handler)
    }

    /// A periodic timer, first firing `periodMs` from now.
    @discardableResult
    public func scheduleRepeating(_ name: StaticString, everyMs periodMs: Int64, _ handler: @escaping () -> Void) -> TimerID {
        scheduleTimer(name, atMs: nowMs + periodMs, periodMs: periodMs, handler)
    }
}

/// Named limits on the work the loop does per wake-up.
public enum EventLoopLimits {
    /// Ready descriptors taken from one epoll_wait.
    public static let readyEventsPerWakeMax = 64
    /// Due timers fired in one turn; the rest fire on the next turn (the loop does not sleep).
    public static let timersPerWakeMax = 64
    /// Registered descriptors.
    public static let registrationsMax = 256
    /// Live timers.
    public static let timersMax = 1024
    /// Distinct handler names with their own timing window (the rest share "other").
    public static let handlerNamesMax = 64
    /// Handler durations kept per name for the rolling max and p99.
    public static let timingWindowCount = 512
    /// The turn lengths the loop counts the turns of at least (`EventLoopStats.turnsAtLeast`),
    /// in milliseconds: how often the loop was slow, not only its one worst turn. 200 ms is one
    /// write on the stalling card the VM tests emulate (dm-delay, docs/performance.md "Latency
    /// under a stalling card"); 50 ms, a press a rider notices.
    public static let slowTurnThresholdsMs: [UInt64] = [50, 100, 200, 500, 1_000]
}

/// What a descriptor is watched for.
public struct IOInterest: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let read = IOInterest(rawValue: 1)
    public static let write = IOInterest(rawValue: 2)
}

/// What a descriptor is ready for. `hangup` and `error` are always reported.
public struct IOReadiness: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let readable = IOReadiness(rawValue: 1)
    public static let writable = IOReadiness(rawValue: 2)
    public static let hangup = IOReadiness(rawValue: 4)
    public static let error = IOReadiness(rawValue: 8)

    public var description: String {
        var parts: [String] = []
        if contains(.readable) { parts.append("readable") }
        if contains(.writable) { parts.append("writable") }
        if contains(.hangup) { parts.append("hangup") }
        if contains(.error) { parts.append("error") }
        return parts.joined(separator: "|")
    }
}

/// A scheduled timer.
public struct TimerID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public var description: String { "timer \(rawValue)" }
}

/// A registered descriptor.
public struct IORegistration: Hashable, Sendable, CustomStringConvertible {
    public let token: UInt64
    public let fd: FileDescriptor
    public var description: String { "registration \(token) (\(fd))" }
}

/// Why the loop refused a registration or failed.
public enum EventLoopError: Error, Sendable, Hashable, CustomStringConvertible {
    case system(SystemError)
    case alreadyRegistered(FileDescriptor)
    case notRegistered(IORegistration)
    case tooManyRegistrations(limit: Int)
    case signalsAlreadyHandled

    public var description: String {
        switch self {
        case .system(let e): "\(e)"
        case .alreadyRegistered(let fd): "\(fd) is already registered with the loop; deregister it first"
        case .notRegistered(let r): "\(r) is not registered with the loop"
        case .tooManyRegistrations(let limit): "more than \(limit) descriptors registered (EventLoopLimits.registrationsMax); close idle clients"
        case .signalsAlreadyHandled: "signals are already handled by this loop; register one signal handler"
        }
    }
}

/// CLOCK_MONOTONIC, the clock the loop, timerfd and GPIO event timestamps use.
public enum MonotonicClock {
    public static var nowNs: UInt64 { cbs_monotonic_ns() }
    public static var nowMs: Int64 { Int64(cbs_monotonic_ns() / 1_000_000) }
}
