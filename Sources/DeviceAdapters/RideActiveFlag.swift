import BoardIO
import Device
import Glibc

/// A file that exists while a ride is in progress (`/run/bikecomputer/ride-active` by default):
/// the USB gadget's refresh unit does not rebuild the drive image while it exists. Touched only
/// when the state changes.
public final class RideActiveFlag {
    public let path: String
    public private(set) var isSet = false
    public private(set) var errors: UInt64 = 0
    public private(set) var lastError: String?

    public init(path: String) { self.path = path }

    /// Removes a file left by a process that crashed (call once at start-up, before the state
    /// is known): the state then sets it again if the recovered ride is still in progress.
    public func removeStale() {
        do { try AtomicFiles.remove(path) } catch {}
        isSet = false
    }

    /// Creates or removes the file to match `active`. Returns false on an error (counted; the
    /// ride goes on).
    @discardableResult
    public func set(_ active: Bool) -> Bool {
        guard active != isSet else { return true }
        do {
            if active {
                try AtomicFiles.makeDirectories(AtomicFiles.directoryName(of: path))
                try AtomicFiles.write(path, Array("ride in progress\n".utf8))
            } else {
                // Not `catch where`: Swift 6.2.3 (Debian's, the aarch64 release) aborts
                // compiling a `catch` with a pattern or `where` after a typed-throws call.
                do { try AtomicFiles.remove(path) } catch { if !error.isNotFound { throw error } }
            }
            isSet = active
            return true
        } catch {
            errors &+= 1
            lastError = "\(path): \(error)"
            return false
        }
    }
}
