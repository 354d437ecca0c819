import AppCore
import BoardIO
import Device

/// The board's `PowerPort` (docs/power.md, "Powering off without root"): the app writes a
/// request file in its runtime directory (`/run/bikecomputer/power-off`, which only the `bike`
/// user can write: the directory is 0750); the root-owned path unit
/// `bikecomputer-poweroff.path` sees it appear and starts `bikecomputer-poweroff.service`, whose
/// only action is a clean `systemctl poweroff`. The app never holds a privilege to power the
/// board off, and nothing root runs reads what the app wrote (the file's presence is the request;
/// its text, the reason, is for a human).
public final class PowerOffRequestFile: PowerPort {
    public static let defaultPath = "/run/bikecomputer/power-off"
    public let path: String

    public init(path: String = PowerOffRequestFile.defaultPath) { self.path = path }

    public func requestPowerOff(_ reason: PowerOffReason) -> String? {
        do {
            try AtomicFiles.write(path, Array("power off: \(reason)\n".utf8))
            return nil
        } catch {
            return "\(path): \(error) (is bikecomputer-poweroff.path installed? board/install.sh installs it)"
        }
    }

    /// Removes a request left from before (a request the system did not act on, an app that
    /// restarted): called at start, so an old request never powers off a fresh start.
    public func removeStale() {
        do { try AtomicFiles.remove(path) } catch {}
    }
}
