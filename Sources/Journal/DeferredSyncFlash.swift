/// The simulated flash with syncs that finish later, as on the board's io_uring: `beginSync` and
/// `beginCreate` only queue the operation; the test says when the card finishes it
/// (`finishNext(error:)`: the data becomes durable, or the sync fails) and the journal then takes
/// the completion from `nextCompletion()`. Power cuts are the wrapped flash's: a cut before an
/// operation finishes loses what it was to make durable (with `.loseUnsynced`).
public final class DeferredSyncFlash: DeferredSyncStorage {
    public let flash: SimulatedFlash
    public var defersSyncs = true

    enum Operation { case sync(UInt32), create(UInt32) }
    var queued: [(token: UInt64, op: Operation)] = []
    var finished: [SyncCompletion] = []
    /// Operations begun (syncs and creations) and how many were waited for (`waitForCompletion`).
    public private(set) var begun = 0
    public private(set) var waited = 0

    public init(_ flash: SimulatedFlash) { self.flash = flash }

    /// Operations begun and not yet finished by the card.
    public var inFlight: Int { queued.count }
    /// Completions the card finished that the journal has not taken yet.
    public var undelivered: Int { finished.count }

    /// The card finishes the oldest operation: durable (its segment synced), or failed with
    /// `error`. Returns false if none was in flight.
    @discardableResult
    public func finishNext(error: StorageError? = nil) -> Bool {
        guard !queued.isEmpty else { return false }
        let (token, op) = queued.removeFirst()
        var result = error
        if result == nil {
            do throws(StorageError) {
                switch op {
                case .sync(let id), .create(let id): try flash.sync(id)
                }
            } catch {
                result = error
            }
        }
        finished.append(SyncCompletion(token: token, error: result))
        return true
    }

    // MARK: DeferredSyncStorage

    public func beginSync(_ id: UInt32, token: UInt64) throws(StorageError) {
        try flash.checkPower()
        guard flash.files[id] != nil else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        begun += 1
        queued.append((token, .sync(id)))
    }

    public func beginCreate(_ id: UInt32, token: UInt64) throws(StorageError) {
        try flash.create(id)
        begun += 1
        queued.append((token, .create(id)))
    }

    public func nextCompletion() -> SyncCompletion? {
        finished.isEmpty ? nil : finished.removeFirst()
    }

    public func waitForCompletion() -> SyncCompletion? {
        if finished.isEmpty {
            guard finishNext() else { return nil }
            waited += 1
        }
        return nextCompletion()
    }

    // MARK: SegmentStorage (the flash's)

    public var segmentBytes: Int { flash.segmentBytes }
    public func list() throws(StorageError) -> [UInt32] { try flash.list() }
    public func create(_ id: UInt32) throws(StorageError) { try flash.create(id) }
    public func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) { try flash.write(id, at: offset, bytes) }
    public func sync(_ id: UInt32) throws(StorageError) { try flash.sync(id) }
    public func read(_ id: UInt32) throws(StorageError) -> [UInt8] { try flash.read(id) }
    public func truncate(_ id: UInt32, at offset: Int) throws(StorageError) { try flash.truncate(id, at: offset) }
    public func remove(_ id: UInt32) throws(StorageError) { try flash.remove(id) }
    public func setAside(_ id: UInt32) throws(StorageError) -> String { try flash.setAside(id) }
    public func copyAside(_ id: UInt32) throws(StorageError) -> String { try flash.copyAside(id) }
    public func availableBytes() -> Int? { flash.availableBytes() }

    /// Power returns (the flash keeps what its cut mode says); operations in flight are gone.
    public func powerCycle() {
        queued.removeAll()
        finished.removeAll()
        flash.powerCycle()
    }
}
