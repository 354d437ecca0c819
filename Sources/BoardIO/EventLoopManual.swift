import Glibc

/// A loop whose clock moves only when told (the simulator and tests), in the manner of
/// SwiftNIO's EmbeddedEventLoop. The same handlers registered through `EventLoop` run here:
/// `advanceTime(byMs:)` fires due timers in deadline order with the clock set to each deadline,
/// `pollDescriptors()` checks the registered descriptors with poll(2) (timeout 0) and runs the
/// ready ones, `simulate(_:on:)` injects readiness, and `raise(_:)` delivers a signal.
public final class ManualEventLoop: EventLoop {
    private var nowNs: UInt64
    private let core = EventLoopCore()
    private var signalHandler: ((Int32) -> Void)?
    private var handledSignals: [Int32] = []

    public init(startMs: Int64 = 0) {
        nowNs = msToNs(startMs)
    }

    public var nowMs: Int64 { Int64(nowNs / 1_000_000) }
    public var stats: EventLoopStats { core.stats }
    public var isStopped: Bool { core.stopRequested }
    public var liveTimerCount: Int { core.timers.count }
    public var registrationCount: Int { core.registrations.count }

    @discardableResult
    public func scheduleTimer(_ name: StaticString, atMs deadlineMs: Int64, periodMs: Int64?,
                              _ handler: @escaping () -> Void) -> TimerID {
        precondition(periodMs.map { $0 > 0 } ?? true, "a periodic timer needs a period > 0 ms")
        return core.schedule(name, deadlineNs: msToNs(deadlineMs), periodNs: periodMs.map(msToNs), handler)
    }

    public func cancelTimer(_ id: TimerID) { core.timers.cancel(id) }

    public func register(_ fd: FileDescriptor, _ name: StaticString, interest: IOInterest,
                         _ handler: @escaping (IOReadiness) -> Void) throws(EventLoopError) -> IORegistration {
        try core.addRegistration(fd, name, interest, handler)
    }

    public func setInterest(_ registration: IORegistration, _ interest: IOInterest) throws(EventLoopError) {
        guard core.registrations[registration.token] != nil else { throw .notRegistered(registration) }
        core.registrations[registration.token]!.interest = interest
    }

    public func deregister(_ registration: IORegistration) { _ = core.removeRegistration(registration) }

    public func handleSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws(EventLoopError) {
        guard signalHandler == nil else { throw .signalsAlreadyHandled }
        handledSignals = signals
        signalHandler = handler
    }

    public func stop() { core.stopRequested = true }

    /// The interest a descriptor is registered with (nil when not registered).
    public func interest(of registration: IORegistration) -> IOInterest? {
        core.registrations[registration.token]?.interest
    }

    /// Moves the clock forward, firing every timer due on the way in deadline order (each sees
    /// `nowMs` equal to its deadline). Timers a handler schedules inside the window fire too.
    public func advanceTime(byMs deltaMs: Int64) {
        precondition(deltaMs >= 0, "time only moves forward")
        advanceTime(toMs: nowMs + deltaMs)
    }

    public func advanceTime(toMs targetMs: Int64) {
        let target = max(nowNs, msToNs(targetMs))
        while core.fireDueTimers(nowNs: target, setNow: { [unowned self] in self.nowNs = max(self.nowNs, $0) }) {
            core.stats.turnsCapped += 1
        }
        core.stats.turns += 1
        nowNs = target
    }

    /// Runs due timers at the current time (after a handler scheduled a 0 ms timer).
    public func runDueTimers() { advanceTime(byMs: 0) }

    /// Checks every registered descriptor with poll(2) without waiting and runs the handlers of
    /// the ready ones (each once). Returns how many handlers ran.
    @discardableResult
    public func pollDescriptors() -> Int {
        let regs = core.registrations.sorted { $0.key < $1.key }
        guard !regs.isEmpty else { return 0 }
        var fds = regs.map { (token, r) -> pollfd in
            var events: Int16 = 0
            if r.interest.contains(.read) { events |= Int16(POLLIN) }
            if r.interest.contains(.write) { events |= Int16(POLLOUT) }
            return pollfd(fd: r.fd.rawValue, events: events, revents: 0)
        }
        let n = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), 0) }
        guard n > 0 else { return 0 }
        var ran = 0
        for (i, (token, _)) in regs.enumerated() where fds[i].revents != 0 {
            var r: IOReadiness = []
            let ev = Int32(fds[i].revents)
            if ev & Int32(POLLIN) != 0 { r.insert(.readable) }
            if ev & Int32(POLLOUT) != 0 { r.insert(.writable) }
            if ev & Int32(POLLHUP) != 0 { r.insert(.hangup) }
            if ev & Int32(POLLERR) != 0 { r.insert(.error) }
            core.dispatch(token: token, r)
            ran += 1
        }
        return ran
    }

    /// Runs the handler of `registration` as if the descriptor were ready.
    public func simulate(_ readiness: IOReadiness, on registration: IORegistration) {
        core.dispatch(token: registration.token, readiness)
    }

    /// Delivers `signal` to the registered signal handler (as the signalfd would).
    public func raise(_ signal: Int32) {
        guard handledSignals.contains(signal), let handler = signalHandler else { return }
        handler(signal)
    }
}
