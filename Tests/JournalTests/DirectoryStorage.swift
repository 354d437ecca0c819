import BoardIO
import Glibc
import Journal

extension SegmentDirectory: SegmentFileSystem {
    public func storageError(_ error: any Error, _ doing: String) -> StorageError {
        guard let e = error as? SystemError else { return StorageError(.other, "\(doing): \(error)") }
        if e.isNoSpace { return StorageError(.noSpace, "\(doing): \(e) — the card is full: delete old rides") }
        if e.isNotFound { return StorageError(.notFound, "\(doing): \(e)") }
        if e.isPermissionDenied || e.errno == EROFS { return StorageError(.permissionDenied, "\(doing): \(e) — check the data directory is writable") }
        if e.errno == EIO { return StorageError(.io, "\(doing): \(e) — the card may be failing: copy your rides off it") }
        return StorageError(.other, "\(doing): \(e)")
    }
}
