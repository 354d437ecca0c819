/// A point on the monotonic clock, in milliseconds since an arbitrary origin (boot, or the
/// simulator's start). Durations on the device are always differences of these: the monotonic
/// clock never jumps when the wall clock is set by NTP after boot.
public struct MonotonicInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var milliseconds: Int64

    @inlinable public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static let zero = MonotonicInstant(milliseconds: 0)

    @inlinable public static func < (a: Self, b: Self) -> Bool { a.milliseconds < b.milliseconds }

    /// `self + ms`.
    @inlinable public func advanced(byMs ms: Int64) -> MonotonicInstant {
        MonotonicInstant(milliseconds: milliseconds + ms)
    }

    /// `self - earlier`, in milliseconds.
    @inlinable public func milliseconds(since earlier: MonotonicInstant) -> Int64 {
        milliseconds - earlier.milliseconds
    }

    public var description: String { "t+\(milliseconds)ms" }
}

/// A reading of the wall clock: Unix time in milliseconds and whether it can be trusted.
/// Boards without a real-time clock boot with a wrong date until NTP or GPS sets it, so every
/// wall time the device records says whether it was trusted when it was read.
public struct WallClockTime: Hashable, Sendable, CustomStringConvertible {
    public var unixMs: Int64
    public var trusted: Bool

    public init(unixMs: Int64, trusted: Bool) {
        self.unixMs = unixMs
        self.trusted = trusted
    }

    public var description: String { "unix \(unixMs)ms\(trusted ? "" : " (untrusted)")" }
}

/// Maps monotonic instants to wall time. Anchored once (at ride start), re-anchored when a
/// trusted wall time arrives after an untrusted one (an NTP sync): timestamps are then corrected
/// for the whole ride rather than duplicated or reversed, because every wall time is derived
/// from the monotonic instant through the latest anchor.
public struct WallClockAnchor: Hashable, Sendable {
    public var monotonic: MonotonicInstant
    public var wall: WallClockTime

    public init(monotonic: MonotonicInstant, wall: WallClockTime) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// The wall time at `instant` according to this anchor.
    public func wallTime(at instant: MonotonicInstant) -> WallClockTime {
        WallClockTime(unixMs: wall.unixMs + instant.milliseconds(since: monotonic), trusted: wall.trusted)
    }

    /// Returns the anchor to use after observing `observed` at `instant`: a trusted reading
    /// replaces an untrusted anchor; an untrusted reading never replaces a trusted one; a trusted
    /// reading that disagrees with a trusted anchor by more than `toleranceMs` (a manual clock
    /// change) replaces it too.
    public func updated(observed: WallClockTime, at instant: MonotonicInstant, toleranceMs: Int64 = 2_000) -> WallClockAnchor {
        if observed.trusted && !wall.trusted { return WallClockAnchor(monotonic: instant, wall: observed) }
        if !observed.trusted { return self }
        let predicted = wallTime(at: instant).unixMs
        if abs(predicted - observed.unixMs) > toleranceMs { return WallClockAnchor(monotonic: instant, wall: observed) }
        return self
    }
}
