/// A directory of named, preallocated files (the board's `SegmentDirectory` conforms to it in
/// the modules that see both the board layer and the journal, with a one-line extension plus
/// `storageError`). Errors are whatever the file system throws; `storageError` classifies them.
public protocol SegmentFileSystem: AnyObject {
    var segmentBytes: Int { get }
    func list() throws -> [String]
    func create(_ name: String) throws
    func write(_ name: String, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws
    func sync(_ name: String) throws
    func read(_ name: String) throws -> [UInt8]
    func zero(_ name: String, from offset: Int) throws
    func remove(_ name: String) throws
    func rename(_ name: String, toFreeNameLike newBase: String) throws -> String
    func copy(_ name: String, toFreeNameLike newBase: String) throws -> String
    func availableBytes() -> Int?
    /// What kind of failure `error` (thrown by this file system while `doing`) is.
    func storageError(_ error: any Error, _ doing: String) -> StorageError
}

/// Journal segments as files named `seg-NNNNNNNN.jnl` in a `SegmentFileSystem`.
public final class FileSystemSegmentStorage: SegmentStorage {
    public let files: SegmentFileSystem
    public var segmentBytes: Int { files.segmentBytes }

    public init(_ files: SegmentFileSystem) { self.files = files }

    func run<T>(_ doing: String, _ body: () throws -> T) throws(StorageError) -> T {
        do { return try body() } catch { throw files.storageError(error, doing) }
    }

    public func list() throws(StorageError) -> [UInt32] {
        try run("listing the journal") { try files.list() }.compactMap(SegmentName.parse).sorted()
    }
    public func create(_ id: UInt32) throws(StorageError) {
        try run("creating \(SegmentName.name(id))") { try files.create(SegmentName.name(id)) }
    }
    public func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) {
        try run("writing \(SegmentName.name(id))") { try files.write(SegmentName.name(id), at: offset, bytes) }
    }
    public func sync(_ id: UInt32) throws(StorageError) {
        try run("syncing \(SegmentName.name(id))") { try files.sync(SegmentName.name(id)) }
    }
    public func read(_ id: UInt32) throws(StorageError) -> [UInt8] {
        try run("reading \(SegmentName.name(id))") { try files.read(SegmentName.name(id)) }
    }
    public func truncate(_ id: UInt32, at offset: Int) throws(StorageError) {
        try run("cutting \(SegmentName.name(id))") { try files.zero(SegmentName.name(id), from: offset) }
    }
    public func remove(_ id: UInt32) throws(StorageError) {
        try run("removing \(SegmentName.name(id))") { try files.remove(SegmentName.name(id)) }
    }
    public func setAside(_ id: UInt32) throws(StorageError) -> String {
        try run("setting \(SegmentName.name(id)) aside") { try files.rename(SegmentName.name(id), toFreeNameLike: SegmentName.name(id) + ".aside") }
    }
    public func copyAside(_ id: UInt32) throws(StorageError) -> String {
        try run("copying \(SegmentName.name(id)) aside") { try files.copy(SegmentName.name(id), toFreeNameLike: SegmentName.name(id) + ".damaged") }
    }
    public func availableBytes() -> Int? { files.availableBytes() }
}
