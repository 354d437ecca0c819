import CBoardShims
import Glibc

/// The board's run loop: one thread, one epoll set. Timers share one timerfd armed at the
/// earliest deadline; signals arrive through a signalfd; `EventLoopWaker` writes an eventfd.
/// The only blocking call is `epoll_wait`, in `runOnce`.
public final class EpollEventLoop: EventLoop {
    private let epoll: FileDescriptor
    private let timerFD: FileDescriptor
    private let wakeFD: FileDescriptor
    private var signalFD: FileDescriptor?
    private var handledSignals: [Int32] = []
    private var signalHandler: ((Int32) -> Void)?
    private var signalSlot = 0
    private var armedDeadlineNs: UInt64 = .max
    private let core = EventLoopCore()
    private var ready: [cbs_ready_event]

    private static let timerToken: UInt64 = 1
    private static let wakeToken: UInt64 = 2
    private static let signalToken: UInt64 = 3

    public init() throws(EventLoopError) {
        do {
            epoll = FileDescriptor(rawValue: try retryingOnInterrupt("epoll_create1") { cbs_epoll_create() })
            timerFD = FileDescriptor(rawValue: try retryingOnInterrupt("timerfd_create") { cbs_timerfd_create() })
            wakeFD = FileDescriptor(rawValue: try retryingOnInterrupt("eventfd") { cbs_eventfd_create() })
            try Self.control(epoll, 0, timerFD, UInt32(CBS_EV_READ), Self.timerToken)
            try Self.control(epoll, 0, wakeFD, UInt32(CBS_EV_READ), Self.wakeToken)
        } catch { throw .system(error) }
        ready = Array(repeating: cbs_ready_event(), count: EventLoopLimits.readyEventsPerWakeMax)
    }

    deinit {
        if let s = signalFD {
            s.close()
            _ = handledSignals.withUnsafeBufferPointer { cbs_signals_unblock($0.baseAddress, Int32($0.count)) }
        }
        timerFD.close()
        wakeFD.close()
        epoll.close()
    }

    private static func control(_ epoll: FileDescriptor, _ op: Int32, _ fd: FileDescriptor, _ events: UInt32, _ token: UInt64) throws(SystemError) {
        _ = try retryingOnInterrupt("epoll_ctl", "\(fd)") { cbs_epoll_ctl(epoll.rawValue, op, fd.rawValue, events, token) }
    }

    private static func epollEvents(_ interest: IOInterest) -> UInt32 {
        var e = UInt32(CBS_EV_RDHUP)
        if interest.contains(.read) { e |= UInt32(CBS_EV_READ) }
        if interest.contains(.write) { e |= UInt32(CBS_EV_WRITE) }
        return e
    }

    // MARK: EventLoop

    public var nowMs: Int64 { Int64(cbs_monotonic_ns() / 1_000_000) }
    public var stats: EventLoopStats { core.stats }

    /// A handle that wakes the loop from another thread or a signal-safe context.
    public var waker: EventLoopWaker { EventLoopWaker(fd: wakeFD.rawValue) }

    @discardableResult
    public func scheduleTimer(_ name: StaticString, atMs deadlineMs: Int64, periodMs: Int64?,
                              _ handler: @escaping () -> Void) -> TimerID {
        precondition(periodMs.map { $0 > 0 } ?? true, "a periodic timer needs a period > 0 ms")
        let id = core.schedule(name, deadlineNs: msToNs(deadlineMs), periodNs: periodMs.map(msToNs), handler)
        if msToNs(deadlineMs) < armedDeadlineNs { rearmTimerFD() }
        return id
    }

    public func cancelTimer(_ id: TimerID) {
        core.timers.cancel(id)
    }

    public func register(_ fd: FileDescriptor, _ name: StaticString, interest: IOInterest,
                         _ handler: @escaping (IOReadiness) -> Void) throws(EventLoopError) -> IORegistration {
        let r = try core.addRegistration(fd, name, interest, handler)
        do {
            try Self.control(epoll, 0, fd, Self.epollEvents(interest), r.token)
        } catch {
            _ = core.removeRegistration(r)
            throw .system(error)
        }
        return r
    }

    public func setInterest(_ registration: IORegistration, _ interest: IOInterest) throws(EventLoopError) {
        guard core.registrations[registration.token] != nil else { throw .notRegistered(registration) }
        guard core.registrations[registration.token]!.interest != interest else { return }
        core.registrations[registration.token]!.interest = interest
        do { try Self.control(epoll, 1, registration.fd, Self.epollEvents(interest), registration.token) } catch { throw .system(error) }
    }

    public func deregister(_ registration: IORegistration) {
        guard core.removeRegistration(registration) else { return }
        _ = cbs_epoll_ctl(epoll.rawValue, 2, registration.fd.rawValue, 0, 0) // fails only if already closed
    }

    public func handleSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws(EventLoopError) {
        guard signalFD == nil else { throw .signalsAlreadyHandled }
        do {
            let raw = try retryingOnInterrupt("signalfd") {
                signals.withUnsafeBufferPointer { cbs_signalfd_create($0.baseAddress, Int32($0.count)) }
            }
            let fd = FileDescriptor(rawValue: raw)
            try Self.control(epoll, 0, fd, UInt32(CBS_EV_READ), Self.signalToken)
            signalFD = fd
        } catch { throw .system(error) }
        handledSignals = signals
        signalHandler = handler
        signalSlot = core.stats.slot(for: "signal")
    }

    public func stop() { core.stopRequested = true }

    /// Ignores SIGPIPE process-wide: a write to a socket whose peer went away returns EPIPE
    /// instead of killing the device. Call once at start-up, before any thread is created.
    public static func ignoreBrokenPipe() {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
    }

    // MARK: Running

    /// Runs turns until `stop()` is called.
    public func run() throws(EventLoopError) {
        core.stopRequested = false
        while !core.stopRequested {
            try runOnce(maxWaitMs: -1)
        }
    }

    /// One turn: waits for readiness (at most `maxWaitMs`, -1 = until something happens), then
    /// runs ready descriptors' handlers and due timers, each bounded by `EventLoopLimits`.
    public func runOnce(maxWaitMs: Int32) throws(EventLoopError) {
        rearmTimerFD()
        let n: Int32
        do {
            n = try retryingOnInterrupt("epoll_wait") {
                ready.withUnsafeMutableBufferPointer { cbs_epoll_wait(epoll.rawValue, $0.baseAddress, Int32($0.count), maxWaitMs) }
            }
        } catch { throw .system(error) }
        let turnStart = cbs_monotonic_ns()
        core.stats.turns += 1
        var capped = Int(n) == ready.count
        for i in 0..<Int(n) {
            let event = ready[i]
            switch event.token {
            case Self.timerToken:
                drain(timerFD) // expirations are recomputed from the heap below
            case Self.wakeToken:
                drain(wakeFD)
            case Self.signalToken:
                deliverSignals()
            default:
                core.dispatch(token: event.token, Self.readiness(event.events))
            }
        }
        if core.fireDueTimers(nowNs: cbs_monotonic_ns()) { capped = true }
        if capped { core.stats.turnsCapped += 1 }
        core.stats.recordTurn(cbs_monotonic_ns() &- turnStart)
    }

    private static func readiness(_ events: UInt32) -> IOReadiness {
        var r: IOReadiness = []
        if events & UInt32(CBS_EV_READ) != 0 { r.insert(.readable) }
        if events & UInt32(CBS_EV_WRITE) != 0 { r.insert(.writable) }
        if events & UInt32(CBS_EV_HANGUP | CBS_EV_RDHUP) != 0 { r.insert(.hangup) }
        if events & UInt32(CBS_EV_ERROR) != 0 { r.insert(.error) }
        return r
    }

    private func drain(_ fd: FileDescriptor) {
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { Glibc.read(fd.rawValue, $0.baseAddress, 8) }
    }

    /// Delivers pending signals, at most a few per turn (a signal storm cannot starve the loop).
    private func deliverSignals() {
        guard let fd = signalFD, let handler = signalHandler else { return }
        for _ in 0..<Self.signalsPerWakeMax {
            let signo = cbs_signalfd_read(fd.rawValue)
            guard signo > 0 else { return }
            let start = cbs_monotonic_ns()
            handler(signo)
            core.stats.record(slot: signalSlot, cbs_monotonic_ns() &- start)
        }
    }

    /// Signals read from the signalfd per turn.
    static let signalsPerWakeMax = 8

    /// Arms the timerfd at the earliest deadline (or disarms it). Called before every wait, so
    /// a turn that left due timers behind (capped) wakes again at once.
    private func rearmTimerFD() {
        let earliest = core.timers.earliestDeadlineNs()
        // Still armed at that deadline, and it has not expired yet: no system call.
        if let e = earliest, e == armedDeadlineNs, e > cbs_monotonic_ns() { return }
        // A deadline already past fires at once; 0 would disarm, so "now" is 1 ns.
        let rc = cbs_timerfd_arm_absolute(timerFD.rawValue, earliest.map { max($0, 1) } ?? 0)
        precondition(rc == 0, "timerfd_settime failed: errno \(errno)") // only with a bad fd: a programmer error
        armedDeadlineNs = earliest ?? UInt64.max
    }
}

/// Wakes an `EpollEventLoop` from another thread (writes its eventfd). The loop wakes, runs a
/// turn and goes back to sleep.
public struct EventLoopWaker: Sendable {
    let fd: Int32
    public func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(fd, $0.baseAddress, 8) }
    }
}
