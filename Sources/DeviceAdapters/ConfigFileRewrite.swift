import BoardIO
import Configuration
import Glibc

/// Pairing's change to the config file on disk, the one way both the running app (the Sensors
/// screen, `sensors pair|forget` on the control socket) and `bikecomputer sensors` without a
/// running app make it: read the file (a missing one is empty), make the change
/// (`SensorPairing.applying`: the edited text must load), write it atomically keeping the old
/// file's mode and owner; a new file is made readable to the bridge, which runs as another user.
public enum ConfigFileRewrite {
    /// The mode of a config file pairing creates (one it replaces keeps its own).
    public static let newFileMode: mode_t = 0o644

    /// Why the file was not changed; nothing is written then.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case unreadable(path: String, SystemError)
        case change(SensorPairing.ChangeFailure)
        case unwritable(path: String, SystemError)

        public var description: String {
            switch self {
            case let .unreadable(path, e): "cannot read \(path): \(e)"
            case .change(let f): f.description
            case let .unwritable(path, e): "cannot write \(path): \(e)"
            }
        }

        /// The write was refused for lack of rights (the caller says whose rights are missing).
        public var isPermissionDenied: Bool {
            if case .unwritable(_, let e) = self { return e.isPermissionDenied }
            return false
        }
    }

    /// Makes `change` to the file at `path`; the config the new file loads as.
    public static func apply(_ change: SensorPairing.Change, path: String) -> Result<DeviceConfig, Failure> {
        var text = ""
        let existed = access(path, F_OK) == 0
        if existed {
            do { text = String(decoding: try AtomicFiles.readAll(path), as: UTF8.self) } catch {
                return .failure(.unreadable(path: path, error))
            }
        }
        let edited: (text: String, config: DeviceConfig)
        switch SensorPairing.applying(change, to: text, path: path) {
        case .success(let e): edited = e
        case .failure(let f): return .failure(.change(f))
        }
        do {
            try AtomicFiles.makeDirectories(AtomicFiles.directoryName(of: path))
            try AtomicFiles.replace(path, Array(edited.text.utf8), mode: newFileMode)
            // A new file is made under the writer's umask (0077 in the app's unit): the bridge,
            // the companion and a shell read it too. (A replaced file keeps the old one's mode.)
            if !existed { _ = chmod(path, newFileMode) }
        } catch {
            return .failure(.unwritable(path: path, error))
        }
        return .success(edited.config)
    }
}
