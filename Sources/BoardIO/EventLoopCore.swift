import CBoardShims

/// What both loops share: the registration table, the timer queue, dispatching with time
/// measurement and the stats. The loops differ only in where time and readiness come from.
final class EventLoopCore {
    struct Registration {
        var fd: FileDescriptor
        var name: StaticString
        var statsSlot: Int
        var interest: IOInterest
        var handler: (IOReadiness) -> Void
    }

    var timers = TimerQueue()
    var registrations: [UInt64: Registration] = [:]
    var tokenByFD: [Int32: UInt64] = [:]
    var stats = EventLoopStats()
    var stopRequested = false
    /// First token handed out to users; lower ones are the loop's own descriptors.
    private var nextToken: UInt64 = 16
    /// Reads the clock used to measure handlers (always the real monotonic clock: the CPU cost
    /// of a handler is real even when the loop's time is manual).
    let measureNs: () -> UInt64 = { cbs_monotonic_ns() }

    init() {
        registrations.reserveCapacity(EventLoopLimits.registrationsMax)
    }

    func addRegistration(_ fd: FileDescriptor, _ name: StaticString, _ interest: IOInterest,
                         _ handler: @escaping (IOReadiness) -> Void) throws(EventLoopError) -> IORegistration {
        if tokenByFD[fd.rawValue] != nil { throw .alreadyRegistered(fd) }
        if registrations.count >= EventLoopLimits.registrationsMax { throw .tooManyRegistrations(limit: EventLoopLimits.registrationsMax) }
        let token = nextToken
        nextToken += 1
        let slot = stats.slot(for: name)
        registrations[token] = Registration(fd: fd, name: name, statsSlot: slot, interest: interest, handler: handler)
        tokenByFD[fd.rawValue] = token
        return IORegistration(token: token, fd: fd)
    }

    func removeRegistration(_ r: IORegistration) -> Bool {
        guard registrations.removeValue(forKey: r.token) != nil else { return false }
        tokenByFD[r.fd.rawValue] = nil
        return true
    }

    /// Calls the handler registered under `token` (if it is still registered) and times it.
    func dispatch(token: UInt64, _ readiness: IOReadiness) {
        guard let r = registrations[token] else { return } // deregistered earlier in this turn
        let start = measureNs()
        r.handler(readiness)
        stats.record(slot: r.statsSlot, measureNs() &- start)
    }

    func schedule(_ name: StaticString, deadlineNs: UInt64, periodNs: UInt64?, _ handler: @escaping () -> Void) -> TimerID {
        let slot = stats.slot(for: name)
        return timers.schedule(name, statsSlot: slot, deadlineNs: deadlineNs, periodNs: periodNs, handler)
    }

    /// Fires due timers in deadline order, at most `EventLoopLimits.timersPerWakeMax`; returns
    /// true when more were due than the limit allowed. `setNow` moves a manual clock to each
    /// timer's deadline before it runs.
    func fireDueTimers(nowNs: UInt64, setNow: ((UInt64) -> Void)? = nil) -> Bool {
        var fired = 0
        while fired < EventLoopLimits.timersPerWakeMax {
            guard let (_, timer) = timers.popDue(nowNs: nowNs, skipLate: setNow == nil, skipped: &stats.timerPeriodsSkipped) else { return false }
            setNow?(timer.deadlineNs)
            stats.timerLatenessMaxNs = max(stats.timerLatenessMaxNs, nowNs &- timer.deadlineNs)
            let start = measureNs()
            timer.handler()
            stats.record(slot: timer.statsSlot, measureNs() &- start)
            fired += 1
        }
        return timers.earliestDeadlineNs().map { $0 <= nowNs } ?? false
    }
}

@inline(__always) func msToNs(_ ms: Int64) -> UInt64 { UInt64(max(0, ms)) &* 1_000_000 }
