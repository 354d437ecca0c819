/// Handler durations for one handler name over the last `EventLoopLimits.timingWindowCount`
/// calls: the rolling maximum and the 99th percentile, plus all-time figures.
public struct HandlerTimings: Sendable {
    public let name: String
    /// Ring of the most recent durations, in nanoseconds (allocated once).
    var windowNs: [UInt64]
    var next = 0
    var filled = 0
    public private(set) var calls: UInt64 = 0
    public private(set) var maxEverNs: UInt64 = 0
    public private(set) var totalNs: UInt64 = 0

    public init(name: String) {
        self.name = name
        windowNs = Array(repeating: 0, count: EventLoopLimits.timingWindowCount)
    }

    public mutating func record(_ ns: UInt64) {
        windowNs[next] = ns
        next = (next + 1) % windowNs.count
        filled = min(filled + 1, windowNs.count)
        calls &+= 1
        totalNs &+= ns
        maxEverNs = max(maxEverNs, ns)
    }

    /// The largest duration in the window.
    public var windowMaxNs: UInt64 { windowNs.prefix(filled).max() ?? 0 }

    /// The duration that 99 % of the calls in the window did not exceed (nearest rank).
    public var windowP99Ns: UInt64 { percentileNs(99) }

    /// Nearest-rank percentile over the window (allocates: call it for status, not per event).
    public func percentileNs(_ p: Int) -> UInt64 {
        guard filled > 0 else { return 0 }
        let sorted = windowNs.prefix(filled).sorted()
        let rank = max(1, (p * filled + 99) / 100)
        return sorted[min(rank, filled) - 1]
    }

    /// A copy of the window's durations, oldest first.
    public var windowSamplesNs: [UInt64] {
        if filled < windowNs.count { return Array(windowNs.prefix(filled)) }
        return Array(windowNs[next...] + windowNs[..<next])
    }
}

/// The loop's figures, exposed through `status`.
public struct EventLoopStats: Sendable {
    /// Per handler name, in the order the names first ran.
    public internal(set) var handlers: [HandlerTimings] = []
    /// Loop turns (wake-ups).
    public internal(set) var turns: UInt64 = 0
    /// Turns that hit a per-wake-up limit and left work for the next turn.
    public internal(set) var turnsCapped: UInt64 = 0
    /// Periodic timer firings skipped because the loop was more than a period late.
    public internal(set) var timerPeriodsSkipped: UInt64 = 0
    /// The latest a timer fired after its deadline, in nanoseconds.
    public internal(set) var timerLatenessMaxNs: UInt64 = 0
    /// The longest single turn (all handlers of one wake-up), in nanoseconds.
    public internal(set) var turnMaxNs: UInt64 = 0
    /// Per threshold of `EventLoopLimits.slowTurnThresholdsMs` (same order), the turns at least
    /// that long: a turn of 250 ms counts under 50, 100 and 200. One worst turn may be the host
    /// (a descheduled CPU); a card that stalls the loop makes one at every write it waits for.
    public internal(set) var turnsAtLeast: [UInt64] = Array(repeating: 0, count: EventLoopLimits.slowTurnThresholdsMs.count)

    var indexByName: [String: Int] = [:]

    public init() {}

    public func timings(_ name: String) -> HandlerTimings? {
        indexByName[name].map { handlers[$0] }
    }

    /// The handler with the largest window maximum (the loop's longest blocking handler).
    public var slowestHandler: HandlerTimings? { handlers.max { $0.windowMaxNs < $1.windowMaxNs } }

    /// The slot of `name`'s timings, created on first use (registration time, not per event).
    mutating func slot(for name: StaticString) -> Int {
        let key = name.description
        if let i = indexByName[key] { return i }
        let slotKey = handlers.count < EventLoopLimits.handlerNamesMax - 1 ? key : "other"
        if let i = indexByName[slotKey] { return i }
        indexByName[slotKey] = handlers.count
        handlers.append(HandlerTimings(name: slotKey))
        return handlers.count - 1
    }

    /// One whole turn's length: the longest turn, and the counts of slow ones (no allocation).
    mutating func recordTurn(_ ns: UInt64) {
        turnMaxNs = max(turnMaxNs, ns)
        for (i, ms) in EventLoopLimits.slowTurnThresholdsMs.enumerated() where ns >= ms &* 1_000_000 {
            turnsAtLeast[i] &+= 1
        }
    }

    /// `(threshold ms, turns at least that long)` for each of `EventLoopLimits.slowTurnThresholdsMs`.
    public var slowTurns: [(ms: UInt64, turns: UInt64)] {
        EventLoopLimits.slowTurnThresholdsMs.enumerated().map { ($0.element, turnsAtLeast[$0.offset]) }
    }

    mutating func record(slot: Int, _ ns: UInt64) {
        handlers[slot].record(ns)
    }
}
