/// A ride's identity: a random (version 4) UUID, generated from bytes the caller supplies so the
/// model stays pure and the simulator stays deterministic.
public struct RideID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A version-4 UUID from 128 random bits.
    public init(random high: UInt64, _ low: UInt64) {
        self.high = (high & ~0xF000) | 0x4000                  // version 4
        self.low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000 // variant 10
    }

    public static func < (a: Self, b: Self) -> Bool { (a.high, a.low) < (b.high, b.low) }

    /// The canonical 8-4-4-4-12 lowercase form.
    public var description: String {
        func hex(_ v: UInt64, _ digits: Int) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: max(0, digits - s.count)) + s
        }
        return hex(high >> 32, 8) + "-" + hex((high >> 16) & 0xFFFF, 4) + "-" + hex(high & 0xFFFF, 4) + "-"
            + hex(low >> 48, 4) + "-" + hex(low & 0xFFFF_FFFF_FFFF, 12)
    }

    /// Parses the canonical form (hyphens optional).
    public init?(_ text: String) {
        let hexDigits = text.filter { $0 != "-" }
        guard hexDigits.count == 32,
              let h = UInt64(hexDigits.prefix(16), radix: 16),
              let l = UInt64(hexDigits.suffix(16), radix: 16) else { return nil }
        high = h
        low = l
    }
}

/// The kernel's identity of one boot (`/proc/sys/kernel/random/boot_id`, a random UUID made at
/// each boot): the device's monotonic clock runs on, without a jump, for as long as it is the same.
public struct BootIdentity: Hashable, Sendable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses the kernel's form (8-4-4-4-12 hexadecimal digits, a newline allowed after).
    public init?(_ text: String) {
        var t = Substring(text)
        while t.last == "\n" { t = t.dropLast() }
        guard let id = RideID(String(t)) else { return nil }
        high = id.high
        low = id.low
    }

    public var description: String { RideID(high: high, low: low).description }
}

/// How a ride's instants relate to the device's monotonic clock in one boot: ride instant =
/// device instant + `offsetMs` (0 for a ride started in this process; after a recovery, the
/// downtime and the earlier offsets). Journaled when the ride starts and after each recovery,
/// so that an app restarted in the same boot measures the time it was down from the monotonic
/// clock (FlashJournal.open) instead of needing a trusted wall clock.
public struct RideTimeline: Hashable, Sendable {
    public var boot: BootIdentity
    public var offsetMs: Int64

    public init(boot: BootIdentity, offsetMs: Int64) {
        self.boot = boot
        self.offsetMs = offsetMs
    }

    /// The ride's instant at device instant `deviceNow` of the same boot.
    public func rideInstant(atDevice deviceNow: MonotonicInstant) -> MonotonicInstant {
        deviceNow.advanced(byMs: offsetMs)
    }
}

/// What the ride needs to be rebuilt, written when the ride starts.
public struct RideHeader: Sendable, Hashable {
    public var rideID: RideID
    /// Monotonic start instant and the wall clock then (trusted or not).
    public var anchor: WallClockAnchor
    public var settings: RideSettings
    /// Activity name, e.g. "cycling_road".
    public var activity: String

    public init(rideID: RideID, anchor: WallClockAnchor, settings: RideSettings, activity: String = "cycling") {
        self.rideID = rideID
        self.anchor = anchor
        self.settings = settings
        self.activity = activity
    }
}

/// A fact of the ride the app core asks to make durable, in the order it happened. Replaying
/// the records of a ride into a fresh app core rebuilds the ride exactly (crash recovery).
public enum RideRecord: Sendable, Hashable {
    /// The ride began (at the end of the countdown).
    case header(RideHeader)
    /// start, pause, resume, lap, stop, marker, gap.
    case event(RideEvent)
    /// A 1 Hz sample: counted into the ride's statistics.
    case sample(Sample)
    /// A high-frequency value (RR interval, raw power) kept as a quantity series for analysis;
    /// not counted into statistics (the 1 Hz samples are).
    case series(Sample)
    /// The wall clock was re-anchored (e.g. NTP sync after boot).
    case wallClock(WallClockAnchor)
    /// The stopped ride was saved (true) or discarded (false).
    case finished(saved: Bool, at: MonotonicInstant)
    /// A metadata fact (bike, firmware version, sensor identities).
    case metadata(key: String, value: String)
    /// A 1 Hz record instant of a running ride at which no quantity had a value (no sensor, or
    /// every one lost): nothing to count, but the ride's time went on. Without it a crash loses
    /// every second since the last sample (recovery restores the timer to the newest instant it
    /// replays), the whole ride on a unit riding with the timer only.
    case elapsed(MonotonicInstant)
    /// The ride's instants against the device's monotonic clock in this boot (`RideTimeline`):
    /// after the header and after each recovery, on a device that knows its boot.
    case timeline(RideTimeline)

    /// A state change must be durable before the screen confirms it; samples may wait for the
    /// next group commit (at most one second).
    /// A 1 Hz record of the ride (a sample, or the instant of one with nothing to count): the
    /// journal commits it at the tick that took it.
    public var isRecordInstant: Bool {
        switch self {
        case .sample, .elapsed: true
        default: false
        }
    }

    public var mustBeDurableAtOnce: Bool {
        switch self {
        case .sample, .series, .metadata, .elapsed: false
        case .header, .event, .wallClock, .finished, .timeline: true
        }
    }
}
