import AppCore
import Device
import RideModel

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
