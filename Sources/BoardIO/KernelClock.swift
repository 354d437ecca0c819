import CBoardShims

/// The kernel's word on the wall clock. A board without a battery-backed clock (a Pi Zero) boots
/// at a saved time (fake-hwclock, systemd-timesyncd's clock file): a plausible date, and wrong
/// by however long the board was off. Only a time source (NTP through systemd-timesyncd or
/// chrony, a GPS time daemon) makes it right, and such a source tells the kernel so: adjtimex's
/// STA_UNSYNC bit is clear while the clock is synchronised, set at boot and after any step.
public enum KernelClock {
    /// True while the kernel says the clock is synchronised to a time source.
    public static func isSynchronised() -> Bool { cbs_clock_synchronised() == 1 }
}
