import AppCore
import Device
import RideModel

/// A journal kept in memory, with the same durability contract as the flash journal: appended
/// records are only buffered until a sync (a group commit at least once a second, or at once for
/// state changes); a crash loses the buffer, never what was synced. Used until a run asks for the
/// simulated flash or a real data directory.
public final class MemoryJournal: RideJournalPort {
    /// Durable records per ride, in order.
    public private(set) var durable: [RideID: [RideRecord]] = [:]
    var pending: [RideRecord] = []
    var currentRide: RideID?
    var lastCommit: MonotonicInstant?
    public private(set) var syncs: UInt64 = 0
    public private(set) var recordsLostToFullDisk: UInt64 = 0
    /// While set, the "disk" is full: nothing new becomes durable.
    public var fullUntil: MonotonicInstant?
    public let commitIntervalMs: Int64

    public init(commitIntervalMs: Int64 = 1_000) { self.commitIntervalMs = commitIntervalMs }

    public var condition: StorageCondition { fullUntil == nil ? .ok : .full }

    public func append(_ record: RideRecord, at now: MonotonicInstant) {
        pending.append(record)
    }

    public func syncNow(at now: MonotonicInstant) {
        if let until = fullUntil {
            if now < until {
                recordsLostToFullDisk &+= UInt64(pending.count)
                pending.removeAll(keepingCapacity: true)
                return
            }
            fullUntil = nil
        }
        for r in pending {
            if case .header(let h) = r { currentRide = h.rideID }
            guard let id = currentRide else { continue }
            durable[id, default: []].append(r)
        }
        pending.removeAll(keepingCapacity: true)
        lastCommit = now
        syncs &+= 1
    }

    public func tick(at now: MonotonicInstant) {
        if let until = fullUntil, now >= until { fullUntil = nil }
        guard !pending.isEmpty else { return }
        if lastCommit == nil || now.milliseconds(since: lastCommit!) >= commitIntervalMs { syncNow(at: now) }
    }

    public func records(of rideID: RideID) -> [RideRecord] { durable[rideID] ?? [] }

    public func rideFileIsDurable(_ rideID: RideID) {
        durable[rideID] = nil
        if currentRide == rideID { currentRide = nil }
    }

    /// The process died: whatever was not synced is gone.
    public func crash() { pending.removeAll() }

    /// The records of the ride that was interrupted, if any (crash recovery).
    public func interruptedRide() -> [RideRecord]? {
        guard let id = currentRide, let r = durable[id], !r.isEmpty else { return nil }
        return r
    }
}

/// Finished rides kept in memory: their records and the ride file bytes written for them.
public final class MemoryArchive: RideArchivePort {
    public private(set) var rides: [(id: RideID, records: [RideRecord])] = []
    public private(set) var deleted: [RideID] = []

    public init() {}

    public func store(rideID: RideID, records: [RideRecord]) throws -> String {
        rides.removeAll { $0.id == rideID }
        rides.append((rideID, records))
        return "\(records.count) records in memory"
    }

    public func delete(rideID: RideID) throws {
        rides.removeAll { $0.id == rideID }
        deleted.append(rideID)
    }
}
