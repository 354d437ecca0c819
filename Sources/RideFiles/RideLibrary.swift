import RideModel

/// The file operations the ride library needs; BoardIO's `AtomicFiles` implements them on the
/// board, tests use an in-memory double.
public protocol RideFileOperations: AnyObject {
    /// File names in `directory` (not paths); an empty list when it does not exist.
    func list(_ directory: String) throws -> [String]
    func read(_ path: String) throws -> [UInt8]
    /// Replaces `path` atomically and durably (a crash leaves the old file or the new one).
    func writeAtomically(_ path: String, _ bytes: [UInt8]) throws
    /// The same write, its waits for the card (the file's fsync, the directory's) done in the
    /// background: nil when it is already durable (the default: `writeAtomically`), else an
    /// operation to `poll` until it is. The board's loop uses it so no turn waits for a slow card.
    func beginWriteAtomically(_ path: String, _ bytes: [UInt8]) throws -> RideFilePendingWrite?
    /// Removes `path` durably; a missing file is fine.
    func remove(_ path: String) throws
    /// Removes `paths` (all in one directory; missing ones are fine), the wait for the
    /// directory's fsync done in the background like `beginWriteAtomically`: nil when already
    /// durable (the default: `remove` each), else an operation to `poll`.
    func beginRemove(_ paths: [String]) throws -> RideFilePendingWrite?
    func makeDirectories(_ path: String) throws
    func size(_ path: String) throws -> Int64
    /// What an error of these operations says about the medium (full, read-only, failing), so
    /// the device can tell the rider; `.other` when it cannot tell.
    func fault(of error: any Error) -> RideFileFault
}

extension RideFileOperations {
    public func fault(of error: any Error) -> RideFileFault { .other }
    public func beginWriteAtomically(_ path: String, _ bytes: [UInt8]) throws -> RideFilePendingWrite? {
        try writeAtomically(path, bytes)
        return nil
    }
    public func beginRemove(_ paths: [String]) throws -> RideFilePendingWrite? {
        for p in paths { try remove(p) }
        return nil
    }
}

/// A `beginWriteAtomically` under way.
public protocol RideFilePendingWrite: AnyObject {
    /// Never waits: true once the file and its name are durable; throws when a step failed
    /// (the temporary file is removed, the old file stays).
    func poll() throws -> Bool
}

/// Why a ride file could not be written, as far as the storage says.
public enum RideFileFault: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// ENOSPC/EDQUOT: no room for the file.
    case full
    /// EROFS/EACCES/EPERM: the data directory cannot be written (a card remounted read-only).
    case readOnly
    /// EIO, or a file that reads back different bytes: the card may be failing.
    case io
    case other

    public var description: String {
        switch self {
        case .full: "full"
        case .readOnly: "read-only"
        case .io: "I/O error"
        case .other: "error"
        }
    }
}

public enum RideFileFormat: String, Sendable, CaseIterable {
    case fit, gpx, tcx
}

public enum RideLibraryError: Error, Sendable, CustomStringConvertible {
    case notFound(String)
    case ambiguous(String, [String])
    case storage(String, fault: RideFileFault = .other)
    case unexportable(RideFileError)
    case full(Int)

    public var description: String {
        switch self {
        case .notFound(let q): "no ride matches \"\(q)\"; list the rides with `bikecomputer rides list`"
        case .ambiguous(let q, let ids): "\"\(q)\" matches \(ids.count) rides (\(ids.prefix(4).joined(separator: ", "))); give more of the id"
        case .storage(let why, _): "\(why); check that the data directory exists, is writable and has free space"
        case .unexportable(let e): e.description
        case .full(let n): "the library holds \(n) rides, its limit; export and delete old rides first"
        }
    }
}

/// One ride in the library: its newest complete version.
public struct RideEntry: Sendable, Hashable {
    public var rideID: RideID
    public var version: Int
    /// Start time (UTC) as it appears in the name, "2026-11-22-083000".
    public var startText: String
    /// File name without extension: "<start>_<uuid>_v<version>".
    public var stem: String
    public var formats: [RideFileFormat]

    public func fileName(_ format: RideFileFormat) -> String { stem + "." + format.rawValue }
}

/// Finished rides in `<data dir>/rides`, one file per format, named
/// `YYYY-MM-DD-HHMMSS_<uuid>_v<N>.<fit|gpx|tcx>` (UTC start time, so names sort by start time).
/// Storing a ride again writes version N+1 and then removes the older version. A version is
/// complete once its `.fit` exists: the FIT is written last, each file atomically and durably.
public final class RideLibrary {
    public static let directoryName = "rides"
    public static let ridesMax = 10_000
    /// Formats written for every ride, in write order (FIT last).
    public static let storedFormats: [RideFileFormat] = [.gpx, .tcx, .fit]

    public let directory: String
    let ops: RideFileOperations

    public init(dataDirectory: String, ops: RideFileOperations) {
        directory = (dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) : dataDirectory) + "/" + Self.directoryName
        self.ops = ops
    }

    public func path(_ entry: RideEntry, _ format: RideFileFormat) -> String { directory + "/" + entry.fileName(format) }

    // MARK: Names

    /// "2026-11-22-083000" for a Unix time.
    public static func startText(unixMs: Int64) -> String {
        let t = UTCDateTime(unixMs: unixMs)
        func pad(_ v: Int, _ n: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, n - s.count)) + s }
        return "\(pad(t.year, 4))-\(pad(t.month, 2))-\(pad(t.day, 2))-\(pad(t.hour, 2))\(pad(t.minute, 2))\(pad(t.second, 2))"
    }

    public static func stem(startUnixMs: Int64, rideID: RideID, version: Int) -> String {
        "\(startText(unixMs: startUnixMs))_\(rideID)_v\(version)"
    }

    /// Parses a library file name; nil for anything else (temporary files, strays).
    public static func parse(_ name: String) -> (stem: String, start: String, id: RideID, version: Int, format: RideFileFormat)? {
        guard let dot = name.lastIndex(of: "."), let format = RideFileFormat(rawValue: String(name[name.index(after: dot)...])) else { return nil }
        let stem = String(name[..<dot])
        let parts = stem.split(separator: "_")
        guard parts.count == 3, parts[0].count == 17, parts[1].count == 36, parts[2].hasPrefix("v"),
              let id = RideID(String(parts[1])), let version = Int(parts[2].dropFirst()), version > 0 else { return nil }
        return (stem, String(parts[0]), id, version, format)
    }

    // MARK: Listing

    /// The rides, oldest first (newest complete version of each).
    public func list() throws(RideLibraryError) -> [RideEntry] {
        let names: [String]
        do { names = try ops.list(directory) } catch { throw .storage("cannot list \(directory): \(error)", fault: ops.fault(of: error)) }
        var byStem: [String: RideEntry] = [:]
        for n in names {
            guard let p = Self.parse(n) else { continue }
            byStem[p.stem, default: RideEntry(rideID: p.id, version: p.version, startText: p.start, stem: p.stem, formats: [])].formats.append(p.format)
        }
        var newest: [RideID: RideEntry] = [:]
        for e in byStem.values where e.formats.contains(.fit) {
            if let have = newest[e.rideID], have.version >= e.version { continue }
            newest[e.rideID] = e
        }
        return newest.values.map { e in
            var e = e
            e.formats = RideFileFormat.allCases.filter { e.formats.contains($0) }
            return e
        }.sorted { ($0.stem, $0.version) < ($1.stem, $1.version) }
    }

    /// The ride whose id is `query` or starts with it (at least 4 characters, hyphens optional).
    public func find(_ query: String) throws(RideLibraryError) -> RideEntry {
        let q = query.lowercased().filter { $0 != "-" }
        guard q.count >= 4 else { throw .notFound(query) }
        let matches = try list().filter { $0.rideID.description.filter { $0 != "-" }.hasPrefix(q) }
        guard let first = matches.first else { throw .notFound(query) }
        guard matches.count == 1 else { throw .ambiguous(query, matches.map { $0.rideID.description }) }
        return first
    }

    public func bytes(_ entry: RideEntry, _ format: RideFileFormat) throws(RideLibraryError) -> [UInt8] {
        guard entry.formats.contains(format) else { throw .notFound("\(entry.rideID) as \(format.rawValue)") }
        do { return try ops.read(path(entry, format)) } catch { throw .storage("cannot read \(path(entry, format)): \(error)") }
    }

    public func size(_ entry: RideEntry, _ format: RideFileFormat) -> Int64? { try? ops.size(path(entry, format)) }

    // MARK: Writing

    /// Writes the ride's files as a new version, durably, then removes older versions.
    @discardableResult
    public func store(rideID: RideID, records: [RideRecord]) throws -> String {
        try storeTyped(rideID: rideID, records: records)
    }

    public func storeTyped(rideID: RideID, records: [RideRecord]) throws(RideLibraryError) -> String {
        let w = writing(rideID: rideID, records: records)
        while try !w.stepTyped() {}
        return w.result ?? ""
    }

    /// The same work as `store`, in bounded steps (`RideFileWrite`), for a caller that must
    /// stay responsive in between (the board's loop).
    public func writing(rideID: RideID, records: [RideRecord]) -> RideFileWrite {
        RideFileWrite(library: self, rideID: rideID, records: records)
    }

    /// Removes every file of the ride (all versions).
    public func delete(rideID: RideID) throws {
        try deleteTyped(rideID: rideID)
    }

    public func deleteTyped(rideID: RideID) throws(RideLibraryError) {
        let names: [String]
        do { names = try ops.list(directory) } catch { throw .storage("cannot list \(directory): \(error)") }
        let mine = names.filter { Self.parse($0)?.id == rideID }
        guard !mine.isEmpty else { throw .notFound(rideID.description) }
        // the .fit files first: once they are gone the ride is no longer listed
        for n in mine.sorted(by: { ($0.hasSuffix(".fit") ? 0 : 1) < ($1.hasSuffix(".fit") ? 0 : 1) }) {
            do { try ops.remove(directory + "/" + n) } catch { throw .storage("cannot remove \(n): \(error)") }
        }
    }
}
