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
    /// reading ahead of a trusted anchor's prediction by more than `toleranceMs` (a gap of
    /// unknown length after a power cut, a clock corrected forward) replaces it. A trusted
    /// reading behind the prediction never does: time in a ride is never re-anchored backwards,
    /// so the ride's record times never run back (issue 17).
    public func updated(observed: WallClockTime, at instant: MonotonicInstant, toleranceMs: Int64 = 2_000) -> WallClockAnchor {
        if observed.trusted && !wall.trusted { return WallClockAnchor(monotonic: instant, wall: observed) }
        if !observed.trusted { return self }
        let predicted = wallTime(at: instant).unixMs
        if observed.unixMs - predicted > toleranceMs { return WallClockAnchor(monotonic: instant, wall: observed) }
        return self
    }
}

/// Civil (proleptic Gregorian, UTC) date and time from Unix milliseconds, without Foundation.
public struct UTCDateTime: Hashable, Sendable {
    public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millisecond: Int

    /// Days since 1970-01-01 → (y, m, d), after Howard Hinnant's `civil_from_days`.
    public init(unixMs: Int64) {
        let ms = unixMs
        var days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        let msOfDay = ms - days * 86_400_000
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        year = Int(y); month = Int(m); day = Int(d)
        hour = Int(msOfDay / 3_600_000)
        minute = Int(msOfDay / 60_000 % 60)
        second = Int(msOfDay / 1000 % 60)
        millisecond = Int(msOfDay % 1000)
    }

    /// Unix milliseconds of a civil date/time (inverse of `init(unixMs:)`).
    public static func unixMs(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64(month > 2 ? month - 3 : month + 9)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000 + Int64(second) * 1000
    }

    /// "2026-11-22T18:30:00Z" (whole seconds).
    public var iso8601: String {
        func pad(_ v: Int, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))Z"
    }
}
