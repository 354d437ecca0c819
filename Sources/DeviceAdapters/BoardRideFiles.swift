import BoardIO
import Glibc
import RideFiles

/// The ride library's file operations on a real directory: atomic writes (temporary file,
/// fsync, rename, fsync of the directory) through BoardIO. Used by `bikecomputer` on the board
/// and by `bikesim --data-dir`, so both store rides the same way.
public final class BoardRideFiles: RideFileOperations {
    public init() {}
    public func list(_ directory: String) throws -> [String] {
        do { return try AtomicFiles.list(directory) } catch where error.isNotFound { return [] }
    }
    public func read(_ path: String) throws -> [UInt8] { try AtomicFiles.readAll(path) }
    public func writeAtomically(_ path: String, _ bytes: [UInt8]) throws { try AtomicFiles.write(path, bytes) }
    public func remove(_ path: String) throws { try AtomicFiles.remove(path) }
    public func makeDirectories(_ path: String) throws { try AtomicFiles.makeDirectories(path) }
    public func size(_ path: String) throws -> Int64 { try AtomicFiles.size(path) }
    public func fault(of error: any Error) -> RideFileFault {
        guard let e = error as? SystemError else { return .other }
        if e.isNoSpace { return .full }
        if e.isPermissionDenied || e.errno == EROFS { return .readOnly }
        if e.errno == EIO { return .io }
        return .other
    }
}
