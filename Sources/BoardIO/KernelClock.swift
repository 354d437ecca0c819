import CBoardShims
import Glibc

/// The kernel's word on the wall clock. A board without a battery-backed clock (a Pi Zero) boots
/// at a saved time (fake-hwclock, systemd-timesyncd's clock file): a plausible date, and wrong
/// by however long the board was off. Only a time source (NTP through systemd-timesyncd or
/// chrony, a GPS time daemon) makes it right, and such a source tells the kernel so: adjtimex's
/// STA_UNSYNC bit is clear while the clock is synchronised, set at boot and after any step.
public enum KernelClock {
    /// True while the kernel says the clock is synchronised to a time source. A state that cannot
    /// be read (a sandbox that forbids adjtimex, which glibc makes as clock_adjtime) counts as
    /// not synchronised, and says so once on stderr (the journal): rides are then dated as on an
    /// unset clock.
    public static func isSynchronised() -> Bool {
        let r = cbs_clock_synchronised()
        if r < 0 { reportUnreadable(errno) }
        return r == 1
    }

    nonisolated(unsafe) static var reportedUnreadable = false

    static func reportUnreadable(_ e: Int32) {
        guard !reportedUnreadable else { return }
        reportedUnreadable = true
        let line = Array(("bikecomputer: error: cannot read whether the clock is synchronised (adjtimex: \(String(cString: strerror(e)))); "
                          + "rides are dated as on an unset clock. The unit's SystemCallFilter= must allow adjtimex and clock_adjtime\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
